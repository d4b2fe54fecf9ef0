package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Task states (docs/guarantees.md).
const (
	TaskWaiting          = "WAITING"
	TaskLeased           = "LEASED"
	TaskRunning          = "RUNNING"
	TaskNeedsReview      = "NEEDS_REVIEW"
	TaskSucceeded        = "SUCCEEDED"
	TaskFailed           = "FAILED"
	TaskCancelled        = "CANCELLED"
	TaskDeadlineExceeded = "DEADLINE_EXCEEDED"
)

// SubmitTaskRequest is the body of POST /v1/tasks. Zero values are left out, so the API's
// defaults apply (priority 0, the queue's max_attempts, a deadline of 86400 s, no key).
type SubmitTaskRequest struct {
	QueueID        string `json:"queue_id"`
	Handler        string `json:"handler"`
	HandlerVersion string `json:"handler_version"`
	PayloadVersion string `json:"payload_version"`
	// Payload is any JSON value up to 256 KiB; nil sends null.
	Payload     json.RawMessage `json:"payload"`
	BusinessKey string          `json:"business_key,omitempty"`
	// ConcurrencyKey: tasks with the same key never hold an execution permit at the same time.
	ConcurrencyKey  string    `json:"concurrency_key,omitempty"`
	Priority        int       `json:"priority,omitempty"`
	MaxAttempts     int       `json:"max_attempts,omitempty"`
	DeadlineSeconds int       `json:"deadline_seconds,omitempty"`
	NotBefore       time.Time `json:"not_before,omitzero"`
}

// BatchItem is one item of SubmitTasks: a submit with its own idempotency key.
type BatchItem struct {
	IdempotencyKey string `json:"idempotency_key"`
	SubmitTaskRequest
}

// Task is a task as the API shows it. A summary (ListTasks) has no Payload and no Result.Output.
type Task struct {
	ID              string          `json:"id"`
	NamespaceID     string          `json:"namespace_id"`
	QueueID         string          `json:"queue_id"`
	Handler         string          `json:"handler"`
	HandlerVersion  string          `json:"handler_version"`
	PayloadVersion  string          `json:"payload_version"`
	Payload         json.RawMessage `json:"payload,omitempty"`
	BusinessKey     string          `json:"business_key,omitempty"`
	ConcurrencyKey  string          `json:"concurrency_key,omitempty"`
	Priority        int             `json:"priority"`
	State           string          `json:"state"`
	AttemptsMade    int             `json:"attempts_made"`
	MaxAttempts     int             `json:"max_attempts"`
	NotBefore       *time.Time      `json:"not_before"`
	DeadlineAt      time.Time       `json:"deadline_at"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
	FinishedAt      *time.Time      `json:"finished_at"`
	Result          *TaskResult     `json:"result"`
	ScheduleID      string          `json:"schedule_id,omitempty"`
	ScheduleVersion int             `json:"schedule_version,omitempty"`
	ScheduledFor    *time.Time      `json:"scheduled_for,omitempty"`
	// Workflow is set on a workflow step's task.
	Workflow *TaskWorkflowRef `json:"workflow,omitempty"`
}

// TaskResult is set once a task is terminal or in review; nil while it is live.
type TaskResult struct {
	// Outcome is succeeded, failed, unknown, cancelled or deadline_exceeded.
	Outcome string          `json:"outcome"`
	Output  json.RawMessage `json:"output,omitempty"`
	Error   *ResultError    `json:"error,omitempty"`
}

// ResultError is the error a task or an attempt ended with.
type ResultError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// TaskWorkflowRef names the run and step a task belongs to; Index only for a for_each element.
type TaskWorkflowRef struct {
	RunID string `json:"run_id"`
	Step  string `json:"step"`
	Index *int   `json:"index,omitempty"`
}

// Attempt is one execution of a task.
type Attempt struct {
	ID        string `json:"id"`
	TaskID    string `json:"task_id"`
	AttemptNo int    `json:"attempt_no"`
	State     string `json:"state"`
	WorkerID  string `json:"worker_id"`
	SessionID string `json:"session_id"`
	// ConcurrencyToken is the attempt's fencing token, set exactly when the task has a
	// concurrency key. A decimal string on the wire, never a float here.
	ConcurrencyToken *uint64      `json:"concurrency_token,string,omitempty"`
	LeasedAt         time.Time    `json:"leased_at"`
	StartedAt        *time.Time   `json:"started_at"`
	LeaseExpiresAt   time.Time    `json:"lease_expires_at"`
	FinishedAt       *time.Time   `json:"finished_at"`
	Outcome          string       `json:"outcome"`
	Error            *ResultError `json:"error"`
}

// TaskReceipt answers every task command. Deduplicated is true when the key had been used with
// the same content: Task is then the frozen state from when the command was first accepted.
type TaskReceipt struct {
	Task         Task `json:"task"`
	Deduplicated bool `json:"deduplicated"`
}

// SubmitReceipt is the receipt of SubmitTask.
type SubmitReceipt = TaskReceipt

// BatchResult is one item's result in SubmitTasks: Receipt when accepted or replayed (Status 201
// or 200), Err when refused (the error a single submit of that item would have returned).
type BatchResult struct {
	Status  int
	Receipt *SubmitReceipt
	Err     *APIError
}

func (r *BatchResult) UnmarshalJSON(b []byte) error {
	var w struct {
		Status int            `json:"status"`
		Data   *SubmitReceipt `json:"data"`
		Error  *wireError     `json:"error"`
	}
	if err := decodeJSON(b, &w); err != nil {
		return err
	}
	*r = BatchResult{Status: w.Status, Receipt: w.Data}
	if w.Error != nil {
		r.Err = w.Error.apiError(w.Status, "")
	}
	return nil
}

// ListTasksQuery filters ListTasks; empty fields do not filter.
type ListTasksQuery struct {
	QueueID        string
	State          string
	ConcurrencyKey string
	BusinessKey    string
	Page
}

// TaskList is a page of task summaries, newest first; NextCursor is "" on the last page.
type TaskList struct {
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"next_cursor"`
}

// ResolveTaskRequest resolves a task in NEEDS_REVIEW: Resolution is succeeded, failed or retry.
type ResolveTaskRequest struct {
	Resolution string `json:"resolution"`
	Reason     string `json:"reason,omitempty"`
}

// SubmitTask submits one task (POST /v1/tasks). The same key with the same request replays the
// first receipt (Deduplicated true); with a different request it is CodeIdempotencyConflict.
func (c *Client) SubmitTask(ctx context.Context, idempotencyKey string, req SubmitTaskRequest) (*SubmitReceipt, error) {
	var out SubmitReceipt
	return orNil(&out, c.command(ctx, "/v1/tasks", idempotencyKey, req, &out))
}

// SubmitTasks submits 1-500 tasks in one request (POST /v1/tasks:batch). Each item is its own
// command (the batch is not atomic): a refused item is a result with Err, and the error return is
// only for the request as a whole. Results are in item order.
func (c *Client) SubmitTasks(ctx context.Context, items []BatchItem) ([]BatchResult, error) {
	for i, it := range items {
		if !validKey(it.IdempotencyKey) {
			return nil, &APIError{Code: CodeInvalidArgument, Details: map[string]any{"field": fmt.Sprintf("tasks.%d.idempotency_key", i)},
				Message: fmt.Sprintf("item %d: an idempotency key of 1-255 visible ASCII characters is required", i)}
		}
	}
	var out struct {
		Results []BatchResult `json:"results"`
	}
	if err := c.post(ctx, "/v1/tasks:batch", map[string]any{"tasks": items}, &out); err != nil {
		return nil, err
	}
	return out.Results, nil
}

// GetTask reads one task with its payload and result.
func (c *Client) GetTask(ctx context.Context, id string) (*Task, error) {
	var out struct {
		Task Task `json:"task"`
	}
	return orNil(&out.Task, c.get(ctx, "/v1/tasks/"+seg(id), nil, &out))
}

// ListTasks lists task summaries, newest first.
func (c *Client) ListTasks(ctx context.Context, q ListTasksQuery) (*TaskList, error) {
	var out TaskList
	return orNil(&out, c.get(ctx, "/v1/tasks", query("queue_id", q.QueueID, "state", q.State, "concurrency_key", q.ConcurrencyKey,
		"business_key", q.BusinessKey, "limit", itoa(q.Limit), "cursor", q.Cursor), &out))
}

// ListAttempts lists a task's attempts by attempt number. History grants no right to execute.
func (c *Client) ListAttempts(ctx context.Context, taskID string) ([]Attempt, error) {
	var out struct {
		Attempts []Attempt `json:"attempts"`
	}
	if err := c.get(ctx, "/v1/tasks/"+seg(taskID)+"/attempts", nil, &out); err != nil {
		return nil, err
	}
	return out.Attempts, nil
}

// GetAttempt reads one attempt.
func (c *Client) GetAttempt(ctx context.Context, id string) (*Attempt, error) {
	var out struct {
		Attempt Attempt `json:"attempt"`
	}
	return orNil(&out.Attempt, c.get(ctx, "/v1/attempts/"+seg(id), nil, &out))
}

// CancelTask cancels a WAITING or LEASED task (reason may be ""). A RUNNING or finished task is
// CodeStateConflict.
func (c *Client) CancelTask(ctx context.Context, id, idempotencyKey, reason string) (*TaskReceipt, error) {
	body := struct {
		Reason string `json:"reason,omitempty"`
	}{reason}
	var out TaskReceipt
	return orNil(&out, c.command(ctx, "/v1/tasks/"+seg(id)+":cancel", idempotencyKey, body, &out))
}

// ResolveTask decides a task in NEEDS_REVIEW; retry returns it to WAITING with a new attempt.
func (c *Client) ResolveTask(ctx context.Context, id, idempotencyKey string, req ResolveTaskRequest) (*TaskReceipt, error) {
	var out TaskReceipt
	return orNil(&out, c.command(ctx, "/v1/tasks/"+seg(id)+":resolve", idempotencyKey, req, &out))
}
