package client

import (
	"context"
	"time"
)

// Event types of the result stream.
const (
	EventTaskSucceeded        = "task.succeeded"
	EventTaskFailed           = "task.failed"
	EventTaskCancelled        = "task.cancelled"
	EventTaskDeadlineExceeded = "task.deadline_exceeded"
	EventTaskNeedsReview      = "task.needs_review"
)

// CreateSubscriptionRequest is the body of POST /v1/subscriptions. The subscription starts at the
// current watermark and belongs to the creating credential.
type CreateSubscriptionRequest struct {
	Name       string   `json:"name"`
	QueueID    string   `json:"queue_id"`
	EventTypes []string `json:"event_types"`
}

// Subscription is a subscription to a queue's result events.
type Subscription struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	QueueID    string   `json:"queue_id"`
	EventTypes []string `json:"event_types"`
	Enabled    bool     `json:"enabled"`
	Paused     bool     `json:"paused"`
	// Cursor is the sequence up to which events have been materialized into deliveries.
	Cursor       uint64     `json:"cursor,string"`
	PendingCount int        `json:"pending_count"`
	Revision     uint64     `json:"revision,string"`
	CreatedAt    time.Time  `json:"created_at"`
	RetiredAt    *time.Time `json:"retired_at,omitempty"`
	// RetiredSequence is the watermark at retirement: later events never belong to it.
	RetiredSequence *uint64 `json:"retired_sequence,string,omitempty"`
}

// SubscriptionReceipt answers every subscription command; see TaskReceipt for Deduplicated.
type SubscriptionReceipt struct {
	Subscription Subscription `json:"subscription"`
	Deduplicated bool         `json:"deduplicated"`
}

// ResultEvent is appended to the namespace's result stream in the transaction that finishes a
// task (or puts it in review). Sequences are strictly increasing per namespace.
type ResultEvent struct {
	Sequence   uint64     `json:"sequence,string"`
	Type       string     `json:"type"`
	TaskID     string     `json:"task_id"`
	QueueID    string     `json:"queue_id"`
	OccurredAt time.Time  `json:"occurred_at"`
	Result     TaskResult `json:"result"`
}

// Delivery is one event handed to a subscription. LeaseDeliveries returns LEASED ones;
// ListDeliveries returns history, where AckedAt and CreatedAt are set and Event is nil once the
// event was pruned.
type Delivery struct {
	ID             string       `json:"id"`
	Sequence       uint64       `json:"sequence,string"`
	State          string       `json:"state"`
	Attempts       int          `json:"attempts"`
	LeaseExpiresAt *time.Time   `json:"lease_expires_at"`
	AckedAt        *time.Time   `json:"acked_at,omitempty"`
	CreatedAt      *time.Time   `json:"created_at,omitempty"`
	Event          *ResultEvent `json:"event"`
}

// DeliveryList is a page of a subscription's deliveries; NextCursor is "" on the last page.
type DeliveryList struct {
	Deliveries []Delivery `json:"deliveries"`
	NextCursor string     `json:"next_cursor"`
}

// CreateSubscription creates a subscription (at most 64 non-retired per namespace:
// CodeQuotaExceeded).
func (c *Client) CreateSubscription(ctx context.Context, idempotencyKey string, req CreateSubscriptionRequest) (*SubscriptionReceipt, error) {
	var out SubscriptionReceipt
	return orNil(&out, c.command(ctx, "/v1/subscriptions", idempotencyKey, req, &out))
}

// GetSubscription reads one subscription the credential owns.
func (c *Client) GetSubscription(ctx context.Context, id string) (*Subscription, error) {
	var out struct {
		Subscription Subscription `json:"subscription"`
	}
	return orNil(&out.Subscription, c.get(ctx, "/v1/subscriptions/"+seg(id), nil, &out))
}

// ListSubscriptions lists the credential's subscriptions.
func (c *Client) ListSubscriptions(ctx context.Context) ([]Subscription, error) {
	var out struct {
		Subscriptions []Subscription `json:"subscriptions"`
	}
	if err := c.get(ctx, "/v1/subscriptions", nil, &out); err != nil {
		return nil, err
	}
	return out.Subscriptions, nil
}

// ListDeliveries lists a subscription's deliveries (state "" for all of them).
func (c *Client) ListDeliveries(ctx context.Context, id, state string, p Page) (*DeliveryList, error) {
	var out DeliveryList
	q := query("state", state, "limit", itoa(p.Limit), "cursor", p.Cursor)
	return orNil(&out, c.get(ctx, "/v1/subscriptions/"+seg(id)+"/deliveries", q, &out))
}

// LeaseDeliveries leases up to max (1-100) deliveries for leaseSeconds (5-600). Delivery is at
// least once: an unacknowledged lease expires and the same delivery comes again.
func (c *Client) LeaseDeliveries(ctx context.Context, id string, max, leaseSeconds int) ([]Delivery, error) {
	body := struct {
		Max          int `json:"max"`
		LeaseSeconds int `json:"lease_seconds"`
	}{max, leaseSeconds}
	var out struct {
		Deliveries []Delivery `json:"deliveries"`
	}
	if err := c.post(ctx, "/v1/subscriptions/"+seg(id)+"/deliveries:lease", body, &out); err != nil {
		return nil, err
	}
	return out.Deliveries, nil
}

// AckDeliveries acknowledges deliveries and returns how many this call acknowledged. Acking is
// idempotent by itself (no key): acking twice is harmless.
func (c *Client) AckDeliveries(ctx context.Context, id string, deliveryIDs []string) (int, error) {
	body := struct {
		DeliveryIDs []string `json:"delivery_ids"`
	}{deliveryIDs}
	var out struct {
		Acked int `json:"acked"`
	}
	if err := c.post(ctx, "/v1/subscriptions/"+seg(id)+"/deliveries:ack", body, &out); err != nil {
		return 0, err
	}
	return out.Acked, nil
}

// PauseSubscription stops new deliveries from being leased.
func (c *Client) PauseSubscription(ctx context.Context, id, idempotencyKey string, expectedRevision uint64) (*SubscriptionReceipt, error) {
	var out SubscriptionReceipt
	return orNil(&out, c.command(ctx, "/v1/subscriptions/"+seg(id)+":pause", idempotencyKey, revisionBody{expectedRevision}, &out))
}

// ResumeSubscription resumes a paused subscription.
func (c *Client) ResumeSubscription(ctx context.Context, id, idempotencyKey string, expectedRevision uint64) (*SubscriptionReceipt, error) {
	var out SubscriptionReceipt
	return orNil(&out, c.command(ctx, "/v1/subscriptions/"+seg(id)+":resume", idempotencyKey, revisionBody{expectedRevision}, &out))
}

// RetireSubscription retires a subscription for good. It is CodeResourceBusy while a delivery is
// pending, leased or expired, or an event it should receive is not yet materialized: consume and
// ack everything first; there is no way to retire by discarding events.
func (c *Client) RetireSubscription(ctx context.Context, id, operationKey string, req RetireResourceRequest) (*SubscriptionReceipt, error) {
	var out SubscriptionReceipt
	return orNil(&out, c.command(ctx, "/v1/subscriptions/"+seg(id)+":retire", operationKey, req, &out))
}
