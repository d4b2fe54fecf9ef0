package client

import (
	"context"
	"encoding/json"
	"strconv"
	"time"
)

// ScheduleCalendar is exactly one of Cron (with an optional IANA Timezone, default UTC) or
// EverySeconds; the server checks the cron syntax and the zone and names the field it refuses.
type ScheduleCalendar struct {
	Cron         string `json:"cron,omitempty"`
	Timezone     string `json:"timezone,omitempty"`
	EverySeconds int    `json:"every_seconds,omitempty"`
}

// ScheduleTask is the task a schedule creates: the fields of SubmitTaskRequest without NotBefore.
// ConcurrencyKey is a fixed value every created task carries. Read back from a version, the
// defaults are filled in.
type ScheduleTask struct {
	QueueID         string          `json:"queue_id"`
	Handler         string          `json:"handler"`
	HandlerVersion  string          `json:"handler_version"`
	PayloadVersion  string          `json:"payload_version"`
	Payload         json.RawMessage `json:"payload"`
	BusinessKey     string          `json:"business_key,omitempty"`
	ConcurrencyKey  string          `json:"concurrency_key,omitempty"`
	Priority        int             `json:"priority,omitempty"`
	MaxAttempts     int             `json:"max_attempts,omitempty"`
	DeadlineSeconds int             `json:"deadline_seconds,omitempty"`
}

// ScheduleVersionInput is a version as published. Empty fields take the defaults: overlap allow,
// catchup latest, catchup_limit 100, no start or end.
type ScheduleVersionInput struct {
	Calendar ScheduleCalendar `json:"calendar"`
	Task     ScheduleTask     `json:"task"`
	// Overlap: allow, or skip while the previous task of the schedule is unfinished.
	Overlap string `json:"overlap,omitempty"`
	// Catchup: none, latest or all, for fire times missed while no gateway ran.
	Catchup      string     `json:"catchup,omitempty"`
	CatchupLimit int        `json:"catchup_limit,omitempty"`
	StartsAt     *time.Time `json:"starts_at,omitempty"`
	EndsAt       *time.Time `json:"ends_at,omitempty"`
}

// ScheduleVersion is a published version; it never changes.
type ScheduleVersion struct {
	Number    int       `json:"number"`
	CreatedAt time.Time `json:"created_at"`
	ScheduleVersionInput
}

// Schedule is a schedule as the API shows it.
type Schedule struct {
	ID             string `json:"id"`
	NamespaceID    string `json:"namespace_id"`
	Name           string `json:"name"`
	Revision       uint64 `json:"revision,string"`
	Paused         bool   `json:"paused"`
	CurrentVersion int    `json:"current_version"`
	// NextFireAt is nil while paused, retired, or past the current version's end.
	NextFireAt *time.Time `json:"next_fire_at"`
	LastFireAt *time.Time `json:"last_fire_at"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	RetiredAt  *time.Time `json:"retired_at,omitempty"`
}

// ScheduleReceipt answers schedule commands; Version is set by create and publish.
type ScheduleReceipt struct {
	Schedule     Schedule         `json:"schedule"`
	Version      *ScheduleVersion `json:"version,omitempty"`
	Deduplicated bool             `json:"deduplicated"`
}

// CreateScheduleRequest is the body of POST /v1/schedules.
type CreateScheduleRequest struct {
	Name    string               `json:"name"`
	Version ScheduleVersionInput `json:"version"`
	Paused  bool                 `json:"paused,omitempty"`
}

// ScheduleList is a page of schedules; NextCursor is "" on the last page.
type ScheduleList struct {
	Schedules  []Schedule `json:"schedules"`
	NextCursor string     `json:"next_cursor"`
}

// ScheduleFire is one fire time of a schedule. Outcome is created (TaskID set),
// skipped_overlap, skipped_catchup or failed_quota.
type ScheduleFire struct {
	ScheduledFor time.Time `json:"scheduled_for"`
	FiredAt      time.Time `json:"fired_at"`
	Version      int       `json:"version"`
	Outcome      string    `json:"outcome"`
	TaskID       string    `json:"task_id,omitempty"`
}

// FireList is a page of a schedule's fires, newest first.
type FireList struct {
	Fires      []ScheduleFire `json:"fires"`
	NextCursor string         `json:"next_cursor"`
}

// CreateSchedule creates a schedule with its first version.
func (c *Client) CreateSchedule(ctx context.Context, idempotencyKey string, req CreateScheduleRequest) (*ScheduleReceipt, error) {
	var out ScheduleReceipt
	return orNil(&out, c.command(ctx, "/v1/schedules", idempotencyKey, req, &out))
}

// PublishScheduleVersion publishes version n+1; fires after the commit use it.
func (c *Client) PublishScheduleVersion(ctx context.Context, id, idempotencyKey string, expectedRevision uint64, v ScheduleVersionInput) (*ScheduleReceipt, error) {
	body := struct {
		ExpectedRevision uint64               `json:"expected_revision,string"`
		Version          ScheduleVersionInput `json:"version"`
	}{expectedRevision, v}
	var out ScheduleReceipt
	return orNil(&out, c.command(ctx, "/v1/schedules/"+seg(id)+"/versions", idempotencyKey, body, &out))
}

// PauseSchedule stops the schedule's fires.
func (c *Client) PauseSchedule(ctx context.Context, id, idempotencyKey string, expectedRevision uint64) (*ScheduleReceipt, error) {
	var out ScheduleReceipt
	return orNil(&out, c.command(ctx, "/v1/schedules/"+seg(id)+":pause", idempotencyKey, revisionBody{expectedRevision}, &out))
}

// ResumeSchedule resumes from now: the paused period is never caught up.
func (c *Client) ResumeSchedule(ctx context.Context, id, idempotencyKey string, expectedRevision uint64) (*ScheduleReceipt, error) {
	var out ScheduleReceipt
	return orNil(&out, c.command(ctx, "/v1/schedules/"+seg(id)+":resume", idempotencyKey, revisionBody{expectedRevision}, &out))
}

// TriggerSchedule creates one task now from the current version, paused or not. scheduledFor is
// the time the task is for (zero: now); the key dedupes the trigger.
func (c *Client) TriggerSchedule(ctx context.Context, id, idempotencyKey string, scheduledFor time.Time) (*TaskReceipt, error) {
	body := struct {
		ScheduledFor time.Time `json:"scheduled_for,omitzero"`
	}{scheduledFor}
	var out TaskReceipt
	return orNil(&out, c.command(ctx, "/v1/schedules/"+seg(id)+":trigger", idempotencyKey, body, &out))
}

// RetireSchedule retires a paused schedule for good (an unpaused one is CodeStateConflict).
func (c *Client) RetireSchedule(ctx context.Context, id, idempotencyKey string, req RetireResourceRequest) (*ScheduleReceipt, error) {
	var out ScheduleReceipt
	return orNil(&out, c.command(ctx, "/v1/schedules/"+seg(id)+":retire", idempotencyKey, req, &out))
}

// GetSchedule reads one schedule.
func (c *Client) GetSchedule(ctx context.Context, id string) (*Schedule, error) {
	var out struct {
		Schedule Schedule `json:"schedule"`
	}
	return orNil(&out.Schedule, c.get(ctx, "/v1/schedules/"+seg(id), nil, &out))
}

// ListSchedules lists the namespace's schedules.
func (c *Client) ListSchedules(ctx context.Context, p Page) (*ScheduleList, error) {
	var out ScheduleList
	return orNil(&out, c.get(ctx, "/v1/schedules", query("limit", itoa(p.Limit), "cursor", p.Cursor), &out))
}

// ListScheduleVersions lists every published version, oldest first.
func (c *Client) ListScheduleVersions(ctx context.Context, id string) ([]ScheduleVersion, error) {
	var out struct {
		Versions []ScheduleVersion `json:"versions"`
	}
	if err := c.get(ctx, "/v1/schedules/"+seg(id)+"/versions", nil, &out); err != nil {
		return nil, err
	}
	return out.Versions, nil
}

// GetScheduleVersion reads version n.
func (c *Client) GetScheduleVersion(ctx context.Context, id string, n int) (*ScheduleVersion, error) {
	var out struct {
		Version ScheduleVersion `json:"version"`
	}
	return orNil(&out.Version, c.get(ctx, "/v1/schedules/"+seg(id)+"/versions/"+strconv.Itoa(n), nil, &out))
}

// ListScheduleFires lists a schedule's fire history, newest first.
func (c *Client) ListScheduleFires(ctx context.Context, id string, p Page) (*FireList, error) {
	var out FireList
	return orNil(&out, c.get(ctx, "/v1/schedules/"+seg(id)+"/fires", query("limit", itoa(p.Limit), "cursor", p.Cursor), &out))
}
