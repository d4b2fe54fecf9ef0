package orbit

import (
	"context"
	"encoding/json"
	"time"
)

// HandlerFunc runs one attempt. Its ctx is cancelled when the attempt's right to execute is gone
// (task.cancel, a lost lease; context.Cause is a *LeaseLostError) or the worker shuts down without
// waiting for it. Its return value decides the result: a nil error is `succeeded` with the output
// marshalled as JSON (nil: no output; json.RawMessage is sent as is); a *RetryError is `retry`; an
// *UnknownOutcomeError is `unknown`; any other error is `failed`.
type HandlerFunc func(ctx context.Context, e *Event) (any, error)

// Handler registers a HandlerFunc for a handler name and its versions.
type Handler struct {
	Name string
	// Versions this function runs (default ["v1"]).
	Versions []string
	Func     HandlerFunc
}

// Task is the task of an attempt, as it was submitted.
type Task struct {
	ID             string
	QueueID        string
	Handler        string
	HandlerVersion string
	PayloadVersion string
	// Payload is the task's JSON payload, as submitted (decode it with json.Unmarshal).
	Payload     json.RawMessage
	BusinessKey string
	// ConcurrencyKey is the resource key ("" for an unkeyed task).
	ConcurrencyKey string
	Priority       int
	DeadlineAt     string
	// Workflow names the run and step of a workflow step's task (nil on other tasks).
	Workflow *WorkflowRef
}

// Event is what a handler receives about its attempt.
type Event struct {
	Task      Task
	AttemptID string
	AttemptNo int64
	// ConcurrencyToken is the attempt's fencing token, exact (parsed with strconv.ParseUint, never
	// through a float); 0 for an unkeyed task (tokens start at 1). Hand it to the resource with the
	// key (package fenced).
	ConcurrencyToken uint64
	// LeaseExpiresAt is the lease expiry the worker knew when the handler started.
	LeaseExpiresAt time.Time
	WorkerID       string
}

// Keyed reports whether the task has a resource key (and so a token).
func (e *Event) Keyed() bool { return e.ConcurrencyToken != 0 }

// newEvent is the handler's view of a checked task.assign (AssignProblem found nothing).
func newEvent(f *TaskAssign, workerID string) *Event {
	t := f.Task
	e := &Event{
		Task: Task{ID: t.ID, QueueID: t.QueueID, Handler: t.Handler, HandlerVersion: t.HandlerVersion,
			PayloadVersion: t.PayloadVersion, Payload: t.Payload, Priority: t.Priority, DeadlineAt: t.DeadlineAt, Workflow: t.Workflow},
		AttemptID: f.AttemptID,
		AttemptNo: f.AttemptNo,
		WorkerID:  workerID,
	}
	if t.BusinessKey != nil {
		e.Task.BusinessKey = *t.BusinessKey
	}
	if t.ConcurrencyKey != nil {
		e.Task.ConcurrencyKey = *t.ConcurrencyKey
	}
	if f.ConcurrencyToken != nil {
		e.ConcurrencyToken, _ = ParseToken(*f.ConcurrencyToken) // checked by AssignProblem
	}
	e.LeaseExpiresAt, _ = time.Parse(time.RFC3339Nano, f.LeaseExpiresAt)
	return e
}
