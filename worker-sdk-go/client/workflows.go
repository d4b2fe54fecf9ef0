package client

import (
	"context"
	"encoding/json"
	"strconv"
	"time"
)

// Workflow run states.
const (
	RunRunning   = "RUNNING"
	RunPaused    = "PAUSED"
	RunSucceeded = "SUCCEEDED"
	RunFailed    = "FAILED"
	RunCancelled = "CANCELLED"
)

// WorkflowStepTask is a task step's task: the fields of SubmitTaskRequest without Payload (built
// per task from the run's input, Params, the parents' outputs and the for_each item) and
// NotBefore. UseRunKey gives the task the run's concurrency key (never with ConcurrencyKey).
// Read back from a version, the defaults are filled in.
type WorkflowStepTask struct {
	QueueID         string          `json:"queue_id"`
	Handler         string          `json:"handler"`
	HandlerVersion  string          `json:"handler_version"`
	PayloadVersion  string          `json:"payload_version"`
	BusinessKey     string          `json:"business_key,omitempty"`
	ConcurrencyKey  string          `json:"concurrency_key,omitempty"`
	Priority        int             `json:"priority,omitempty"`
	MaxAttempts     int             `json:"max_attempts,omitempty"`
	DeadlineSeconds int             `json:"deadline_seconds,omitempty"`
	Params          json.RawMessage `json:"params,omitempty"`
	UseRunKey       bool            `json:"use_run_key,omitempty"`
}

// WorkflowSignal is a step that waits for a signal named Name (TimeoutSeconds 0: the default).
type WorkflowSignal struct {
	Name           string `json:"name"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
}

// WorkflowStep is one step: exactly one of Task or Signal. After lists its parents (none: a
// root); RunIf is all_succeeded (default), any_failed or always; ForEach names a parent whose
// output array fans the step out.
type WorkflowStep struct {
	Key          string            `json:"key"`
	After        []string          `json:"after,omitempty"`
	Task         *WorkflowStepTask `json:"task,omitempty"`
	Signal       *WorkflowSignal   `json:"signal,omitempty"`
	ForEach      string            `json:"for_each,omitempty"`
	RunIf        string            `json:"run_if,omitempty"`
	DelaySeconds int               `json:"delay_seconds,omitempty"`
}

// WorkflowVersionInput is a version as published: 1-50 steps. The server checks the graph
// (unique keys, known parents, no cycle) and names the offending steps.
type WorkflowVersionInput struct {
	Steps []WorkflowStep `json:"steps"`
}

// WorkflowVersion is a published version; it never changes.
type WorkflowVersion struct {
	Number    int       `json:"number"`
	CreatedAt time.Time `json:"created_at"`
	WorkflowVersionInput
}

// Workflow is a workflow definition; publishing and retiring bump Revision, runs do not.
type Workflow struct {
	ID             string     `json:"id"`
	NamespaceID    string     `json:"namespace_id"`
	Name           string     `json:"name"`
	Revision       uint64     `json:"revision,string"`
	CurrentVersion int        `json:"current_version"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	RetiredAt      *time.Time `json:"retired_at,omitempty"`
}

// WorkflowReceipt answers workflow commands; Version is set by create and publish.
type WorkflowReceipt struct {
	Workflow     Workflow         `json:"workflow"`
	Version      *WorkflowVersion `json:"version,omitempty"`
	Deduplicated bool             `json:"deduplicated"`
}

// WorkflowRunStep is one step of a run; TaskIDs in element order.
type WorkflowRunStep struct {
	Key     string   `json:"key"`
	State   string   `json:"state"`
	TaskIDs []string `json:"task_ids"`
	// Output of a SUCCEEDED step: its task's output, a for_each step's outputs, a signal's payload.
	Output json.RawMessage `json:"output,omitempty"`
	Error  *ResultError    `json:"error,omitempty"`
	// SkippedBecause is parent_failed or condition for a SKIPPED step.
	SkippedBecause string     `json:"skipped_because,omitempty"`
	StartedAt      *time.Time `json:"started_at,omitempty"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
}

// WorkflowRun is a run. Listed runs (ListWorkflowRuns) have no Input and no Steps.
type WorkflowRun struct {
	ID             string            `json:"id"`
	WorkflowID     string            `json:"workflow_id"`
	Version        int               `json:"version"`
	State          string            `json:"state"`
	ConcurrencyKey string            `json:"concurrency_key,omitempty"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
	FinishedAt     *time.Time        `json:"finished_at"`
	Input          json.RawMessage   `json:"input,omitempty"`
	Steps          []WorkflowRunStep `json:"steps,omitempty"`
}

// RunReceipt answers run commands; see TaskReceipt for Deduplicated.
type RunReceipt struct {
	Run          WorkflowRun `json:"run"`
	Deduplicated bool        `json:"deduplicated"`
}

// CreateWorkflowRequest is the body of POST /v1/workflows.
type CreateWorkflowRequest struct {
	Name    string               `json:"name"`
	Version WorkflowVersionInput `json:"version"`
}

// StartRunRequest starts a run. Version 0 is the version current at acceptance (a different
// command, for idempotency, from naming that version); Input nil is null.
type StartRunRequest struct {
	Input          json.RawMessage `json:"input,omitempty"`
	Version        int             `json:"version,omitempty"`
	ConcurrencyKey string          `json:"concurrency_key,omitempty"`
}

// WorkflowList is a page of workflows; NextCursor is "" on the last page.
type WorkflowList struct {
	Workflows  []Workflow `json:"workflows"`
	NextCursor string     `json:"next_cursor"`
}

// ListRunsQuery filters ListWorkflowRuns; empty fields do not filter.
type ListRunsQuery struct {
	WorkflowID string
	State      string
	Page
}

// RunList is a page of run summaries, newest first.
type RunList struct {
	Runs       []WorkflowRun `json:"runs"`
	NextCursor string        `json:"next_cursor"`
}

// CreateWorkflow creates a workflow with its first version.
func (c *Client) CreateWorkflow(ctx context.Context, idempotencyKey string, req CreateWorkflowRequest) (*WorkflowReceipt, error) {
	var out WorkflowReceipt
	return orNil(&out, c.command(ctx, "/v1/workflows", idempotencyKey, req, &out))
}

// PublishWorkflowVersion publishes version n+1: runs started later use it, running runs keep
// theirs.
func (c *Client) PublishWorkflowVersion(ctx context.Context, id, idempotencyKey string, expectedRevision uint64, v WorkflowVersionInput) (*WorkflowReceipt, error) {
	body := struct {
		ExpectedRevision uint64               `json:"expected_revision,string"`
		Version          WorkflowVersionInput `json:"version"`
	}{expectedRevision, v}
	var out WorkflowReceipt
	return orNil(&out, c.command(ctx, "/v1/workflows/"+seg(id)+"/versions", idempotencyKey, body, &out))
}

// RetireWorkflow retires a workflow for good; CodeResourceBusy while a run is unfinished.
func (c *Client) RetireWorkflow(ctx context.Context, id, idempotencyKey string, req RetireResourceRequest) (*WorkflowReceipt, error) {
	var out WorkflowReceipt
	return orNil(&out, c.command(ctx, "/v1/workflows/"+seg(id)+":retire", idempotencyKey, req, &out))
}

// GetWorkflow reads one workflow.
func (c *Client) GetWorkflow(ctx context.Context, id string) (*Workflow, error) {
	var out struct {
		Workflow Workflow `json:"workflow"`
	}
	return orNil(&out.Workflow, c.get(ctx, "/v1/workflows/"+seg(id), nil, &out))
}

// ListWorkflows lists the namespace's workflows.
func (c *Client) ListWorkflows(ctx context.Context, p Page) (*WorkflowList, error) {
	var out WorkflowList
	return orNil(&out, c.get(ctx, "/v1/workflows", query("limit", itoa(p.Limit), "cursor", p.Cursor), &out))
}

// ListWorkflowVersions lists every published version, oldest first.
func (c *Client) ListWorkflowVersions(ctx context.Context, id string) ([]WorkflowVersion, error) {
	var out struct {
		Versions []WorkflowVersion `json:"versions"`
	}
	if err := c.get(ctx, "/v1/workflows/"+seg(id)+"/versions", nil, &out); err != nil {
		return nil, err
	}
	return out.Versions, nil
}

// GetWorkflowVersion reads version n.
func (c *Client) GetWorkflowVersion(ctx context.Context, id string, n int) (*WorkflowVersion, error) {
	var out struct {
		Version WorkflowVersion `json:"version"`
	}
	return orNil(&out.Version, c.get(ctx, "/v1/workflows/"+seg(id)+"/versions/"+strconv.Itoa(n), nil, &out))
}

// StartWorkflowRun starts a run (201); its root steps start in the same transaction.
func (c *Client) StartWorkflowRun(ctx context.Context, workflowID, idempotencyKey string, req StartRunRequest) (*RunReceipt, error) {
	return c.runCommand(ctx, "/v1/workflows/"+seg(workflowID)+"/runs", idempotencyKey, req)
}

// PauseWorkflowRun stops new step tasks; tasks already created go on.
func (c *Client) PauseWorkflowRun(ctx context.Context, id, idempotencyKey string) (*RunReceipt, error) {
	return c.runCommand(ctx, "/v1/workflow-runs/"+seg(id)+":pause", idempotencyKey, struct{}{})
}

// ResumeWorkflowRun creates the tasks of the steps that became ready while paused.
func (c *Client) ResumeWorkflowRun(ctx context.Context, id, idempotencyKey string) (*RunReceipt, error) {
	return c.runCommand(ctx, "/v1/workflow-runs/"+seg(id)+":resume", idempotencyKey, struct{}{})
}

// CancelWorkflowRun cancels a run (reason may be ""): its WAITING and LEASED tasks are
// cancelled, RUNNING ones finish and are recorded, nothing starts after them.
func (c *Client) CancelWorkflowRun(ctx context.Context, id, idempotencyKey, reason string) (*RunReceipt, error) {
	body := struct {
		Reason string `json:"reason,omitempty"`
	}{reason}
	return c.runCommand(ctx, "/v1/workflow-runs/"+seg(id)+":cancel", idempotencyKey, body)
}

// SignalWorkflowRun sends the signal name with payload (nil: null, at most 64 KiB). A signal sent
// before its step is reached is kept; a second signal of one name is CodeStateConflict.
func (c *Client) SignalWorkflowRun(ctx context.Context, id, idempotencyKey, name string, payload json.RawMessage) (*RunReceipt, error) {
	body := struct {
		Name    string          `json:"name"`
		Payload json.RawMessage `json:"payload,omitempty"`
	}{name, payload}
	return c.runCommand(ctx, "/v1/workflow-runs/"+seg(id)+"/signals", idempotencyKey, body)
}

// GetWorkflowRun reads a run with its input and steps.
func (c *Client) GetWorkflowRun(ctx context.Context, id string) (*WorkflowRun, error) {
	var out struct {
		Run WorkflowRun `json:"run"`
	}
	return orNil(&out.Run, c.get(ctx, "/v1/workflow-runs/"+seg(id), nil, &out))
}

// ListWorkflowRuns lists run summaries, newest first.
func (c *Client) ListWorkflowRuns(ctx context.Context, q ListRunsQuery) (*RunList, error) {
	var out RunList
	return orNil(&out, c.get(ctx, "/v1/workflow-runs", query("workflow_id", q.WorkflowID, "state", q.State,
		"limit", itoa(q.Limit), "cursor", q.Cursor), &out))
}

func (c *Client) runCommand(ctx context.Context, path, idempotencyKey string, body any) (*RunReceipt, error) {
	var out RunReceipt
	return orNil(&out, c.command(ctx, path, idempotencyKey, body, &out))
}
