package client

import (
	"context"
	"time"
)

// RetryPolicy is how a queue retries a failed attempt. In CreateQueueRequest every field is sent
// as given (0 is a valid backoff), so set them all.
type RetryPolicy struct {
	MaxAttempts      int     `json:"max_attempts"`
	InitialBackoffMS int     `json:"initial_backoff_ms"`
	MaxBackoffMS     int     `json:"max_backoff_ms"`
	Multiplier       float64 `json:"multiplier"`
}

// CreateQueueRequest is the body of POST /v1/queues. Zero values take the API's defaults
// (1000 active attempts, 30 s leases, 3 attempts with 1 s to 60 s backoff, multiplier 2).
type CreateQueueRequest struct {
	// Name: 1-64 of [a-z0-9._-], unique in the namespace forever (a retired queue keeps its name).
	Name              string       `json:"name"`
	MaxActiveAttempts int          `json:"max_active_attempts,omitempty"`
	LeaseSeconds      int          `json:"lease_seconds,omitempty"`
	Retry             *RetryPolicy `json:"retry,omitempty"`
}

// Queue is a queue as the API shows it.
type Queue struct {
	ID          string `json:"id"`
	NamespaceID string `json:"namespace_id"`
	Name        string `json:"name"`
	// Revision is bumped by every change (pause and resume included); commands name the one
	// they expect.
	Revision          uint64      `json:"revision,string"`
	Paused            bool        `json:"paused"`
	MaxActiveAttempts int         `json:"max_active_attempts"`
	LeaseSeconds      int         `json:"lease_seconds"`
	Retry             RetryPolicy `json:"retry"`
	ActiveAttempts    int         `json:"active_attempts"`
	CreatedAt         time.Time   `json:"created_at"`
	UpdatedAt         time.Time   `json:"updated_at"`
	RetiredAt         *time.Time  `json:"retired_at,omitempty"`
}

// QueueReceipt answers every queue command; see TaskReceipt for Deduplicated.
type QueueReceipt struct {
	Queue        Queue `json:"queue"`
	Deduplicated bool  `json:"deduplicated"`
}

// RetireResourceRequest retires a queue, subscription, schedule or workflow: irreversible, and
// refused (CodeResourceBusy, the message naming the blocker) while anything still depends on it.
// A revision that is not current is CodeStateConflict.
type RetireResourceRequest struct {
	ExpectedRevision uint64 `json:"expected_revision,string"`
	// Reason: 1-512 characters, kept in the audit.
	Reason string `json:"reason"`
}

// revisionBody is the body of pause and resume commands.
type revisionBody struct {
	ExpectedRevision uint64 `json:"expected_revision,string"`
}

// QueueStats is a queue's current load and its last 15 minutes of outcomes, oldest first.
type QueueStats struct {
	Waiting           int            `json:"waiting"`
	Leased            int            `json:"leased"`
	Running           int            `json:"running"`
	NeedsReview       int            `json:"needs_review"`
	ActiveAttempts    int            `json:"active_attempts"`
	MaxActiveAttempts int            `json:"max_active_attempts"`
	OldestWaitingAt   *time.Time     `json:"oldest_waiting_at"`
	Minutes           []MinuteBucket `json:"minutes"`
}

// MinuteBucket counts the tasks that finished in each terminal state during one minute.
type MinuteBucket struct {
	Minute           time.Time `json:"minute"`
	Succeeded        int       `json:"succeeded"`
	Failed           int       `json:"failed"`
	Cancelled        int       `json:"cancelled"`
	DeadlineExceeded int       `json:"deadline_exceeded"`
}

// WorkerSession is a connected worker.
type WorkerSession struct {
	WorkerID  string   `json:"worker_id"`
	SessionID string   `json:"session_id"`
	NodeID    string   `json:"node_id"`
	Queues    []string `json:"queues"`
	Capacity  int      `json:"capacity"`
	InFlight  int      `json:"in_flight"`
	// ConcurrencyKeys: the worker may receive tasks with a concurrency key.
	ConcurrencyKeys bool      `json:"concurrency_keys"`
	Draining        bool      `json:"draining"`
	ConnectedAt     time.Time `json:"connected_at"`
	LastSeenAt      time.Time `json:"last_seen_at"`
}

// CreateQueue creates a queue (201); a replay of the same key and request is Deduplicated.
func (c *Client) CreateQueue(ctx context.Context, idempotencyKey string, req CreateQueueRequest) (*QueueReceipt, error) {
	var out QueueReceipt
	return orNil(&out, c.command(ctx, "/v1/queues", idempotencyKey, req, &out))
}

// GetQueue reads one queue (retired ones included).
func (c *Client) GetQueue(ctx context.Context, id string) (*Queue, error) {
	var out struct {
		Queue Queue `json:"queue"`
	}
	return orNil(&out.Queue, c.get(ctx, "/v1/queues/"+seg(id), nil, &out))
}

// ListQueues lists the queues the credential may use.
func (c *Client) ListQueues(ctx context.Context) ([]Queue, error) {
	var out struct {
		Queues []Queue `json:"queues"`
	}
	if err := c.get(ctx, "/v1/queues", nil, &out); err != nil {
		return nil, err
	}
	return out.Queues, nil
}

// PauseQueue stops dispatch from the queue; it still accepts tasks, which wait.
func (c *Client) PauseQueue(ctx context.Context, id, idempotencyKey string, expectedRevision uint64) (*QueueReceipt, error) {
	var out QueueReceipt
	return orNil(&out, c.command(ctx, "/v1/queues/"+seg(id)+":pause", idempotencyKey, revisionBody{expectedRevision}, &out))
}

// ResumeQueue restarts dispatch from a paused queue.
func (c *Client) ResumeQueue(ctx context.Context, id, idempotencyKey string, expectedRevision uint64) (*QueueReceipt, error) {
	var out QueueReceipt
	return orNil(&out, c.command(ctx, "/v1/queues/"+seg(id)+":resume", idempotencyKey, revisionBody{expectedRevision}, &out))
}

// RetireQueue retires a queue for good. It is CodeResourceBusy while the queue has unfinished
// tasks, in-flight attempts, an enabled schedule, an unfinished workflow run or a non-retired
// subscription; afterwards new work aimed at it is CodeResourceRetired.
func (c *Client) RetireQueue(ctx context.Context, id, operationKey string, req RetireResourceRequest) (*QueueReceipt, error) {
	var out QueueReceipt
	return orNil(&out, c.command(ctx, "/v1/queues/"+seg(id)+":retire", operationKey, req, &out))
}

// GetQueueStats reads a queue's load and recent outcomes.
func (c *Client) GetQueueStats(ctx context.Context, id string) (*QueueStats, error) {
	var out struct {
		Stats QueueStats `json:"stats"`
	}
	return orNil(&out.Stats, c.get(ctx, "/v1/queues/"+seg(id)+"/stats", nil, &out))
}

// ListWorkers lists the connected worker sessions, of one queue when queueID is not "".
func (c *Client) ListWorkers(ctx context.Context, queueID string) ([]WorkerSession, error) {
	var out struct {
		Workers []WorkerSession `json:"workers"`
	}
	if err := c.get(ctx, "/v1/workers", query("queue_id", queueID), &out); err != nil {
		return nil, err
	}
	return out.Workers, nil
}
