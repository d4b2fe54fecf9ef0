package orbit

import "encoding/json"

// The frames the gateway sends (docs/worker-protocol.md, "Gateway → worker frames"), as
// DecodeGatewayFrame returns them. Optional fields are pointers: absent and empty differ (a
// concurrency_key of "" with a token is refused, an absent one is an unkeyed task).

// GatewayFrame is one decoded frame from the gateway.
type GatewayFrame interface{ FrameType() string }

// HelloOK answers hello: the session is open.
type HelloOK struct {
	SessionID     string
	WorkerID      string
	LeaseMs       int64
	RenewMs       int64
	MaxFrameBytes int64
	// Resumed are the attempts of hello's resume list bound to this session, with the same token.
	Resumed []ResumedAttempt
	// Lost are the resume ids the gateway no longer holds for this worker.
	Lost []string
}

// ResumedAttempt is one attempt a new session resumed.
type ResumedAttempt struct {
	AttemptID        string
	State            string // LEASED or RUNNING
	LeaseExpiresAt   string
	ConcurrencyToken *string
}

// TaskAssign hands the worker an attempt.
type TaskAssign struct {
	AttemptID      string
	AttemptNo      int64
	LeaseExpiresAt string
	// ConcurrencyToken is the decimal fencing token, present exactly when Task.ConcurrencyKey is.
	ConcurrencyToken *string
	Task             AssignedTask
}

// AssignedTask is the task of a task.assign frame, its fields as submitted.
type AssignedTask struct {
	ID             string
	QueueID        string
	Handler        string
	HandlerVersion string
	PayloadVersion string
	Payload        json.RawMessage
	BusinessKey    *string
	ConcurrencyKey *string
	Priority       int
	DeadlineAt     string
	Workflow       *WorkflowRef

	keyNotWellFormed bool // the key's JSON held a lone surrogate (decoded as U+FFFD)
}

// WorkflowRef names the run and step of a workflow step's task.
type WorkflowRef struct {
	RunID string
	Step  string
	// Index is the element of a for_each step, nil on other steps.
	Index *int64
}

// StartOK confirms the right to execute an attempt.
type StartOK struct {
	AttemptID      string
	LeaseExpiresAt string
}

// Lease is one renewed lease of renew.ok.
type Lease struct {
	AttemptID      string
	LeaseExpiresAt string
}

// RenewOK answers renew.
type RenewOK struct {
	Leases []Lease
	Lost   []string
}

// ResultOK acknowledges a result.
type ResultOK struct {
	AttemptID    string
	Deduplicated bool
	TaskState    string
}

// TaskCancel withdraws the right to execute an attempt.
type TaskCancel struct {
	AttemptID string
	Reason    string // CANCELLED, LEASE_EXPIRED or DEADLINE_EXCEEDED
}

// ErrorFrame is the gateway's error frame.
type ErrorFrame struct {
	Code      string
	Message   string
	AttemptID *string
	Fatal     bool
}

// DrainOK answers drain: nothing more is assigned to the session.
type DrainOK struct{}

// Goaway says the gateway node is shutting down: reconnect and resume.
type Goaway struct{ Reason string }

func (*HelloOK) FrameType() string    { return "hello.ok" }
func (*TaskAssign) FrameType() string { return "task.assign" }
func (*StartOK) FrameType() string    { return "start.ok" }
func (*RenewOK) FrameType() string    { return "renew.ok" }
func (*ResultOK) FrameType() string   { return "result.ok" }
func (*TaskCancel) FrameType() string { return "task.cancel" }
func (*ErrorFrame) FrameType() string { return "error" }
func (*DrainOK) FrameType() string    { return "drain.ok" }
func (*Goaway) FrameType() string     { return "goaway" }

// TaskStates are the states a task may be in (result.ok's task_state).
var TaskStates = []string{"WAITING", "LEASED", "RUNNING", "NEEDS_REVIEW", "SUCCEEDED", "FAILED", "CANCELLED", "DEADLINE_EXCEEDED"}
