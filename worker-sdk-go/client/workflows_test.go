package client_test

import (
	"encoding/json"
	"testing"

	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
)

// A run that waits for an approval signal, then applies a task: create, publish, start, signal
// (and its replay and conflict), cancel, retire.
func TestWorkflowRun(t *testing.T) {
	e := newEnv(t)
	ctx := ctxOf(t)
	q := e.newQueue(t)
	v1 := client.WorkflowVersionInput{Steps: []client.WorkflowStep{
		{Key: "approve", Signal: &client.WorkflowSignal{Name: "approve"}},
		{Key: "apply", After: []string{"approve"}, Task: &client.WorkflowStepTask{QueueID: q.ID, Handler: "object.update",
			HandlerVersion: "v1", PayloadVersion: "v1", Params: json.RawMessage(`{"mode":"full"}`), UseRunKey: true}},
	}}
	created, err := e.c.CreateWorkflow(ctx, e.key("create"), client.CreateWorkflowRequest{Name: e.name("wf"), Version: v1})
	if err != nil {
		t.Fatalf("CreateWorkflow: %v", err)
	}
	wf := created.Workflow
	if wf.CurrentVersion != 1 || created.Version == nil || len(created.Version.Steps) != 2 || created.Version.Steps[1].RunIf != "all_succeeded" {
		t.Fatalf("created: %+v version %+v", wf, created.Version)
	}
	cyclic := client.WorkflowVersionInput{Steps: []client.WorkflowStep{{Key: "a", After: []string{"a"}, Signal: &client.WorkflowSignal{Name: "s"}}}}
	_, err = e.c.PublishWorkflowVersion(ctx, wf.ID, e.key("cyclic"), wf.Revision, cyclic)
	wantCode(t, err, client.CodeInvalidArgument)

	v2 := v1
	v2.Steps = append([]client.WorkflowStep(nil), v1.Steps...)
	v2.Steps[0].Signal = &client.WorkflowSignal{Name: "approve", TimeoutSeconds: 3600}
	published, err := e.c.PublishWorkflowVersion(ctx, wf.ID, e.key("publish"), wf.Revision, v2)
	if err != nil || published.Workflow.CurrentVersion != 2 || published.Workflow.Revision != wf.Revision+1 {
		t.Fatalf("PublishWorkflowVersion: %+v %v", published, err)
	}

	start := client.StartRunRequest{Input: json.RawMessage(`{"object":"objects/42"}`), ConcurrencyKey: "object/" + e.id}
	started, err := e.c.StartWorkflowRun(ctx, wf.ID, e.key("start"), start)
	if err != nil {
		t.Fatalf("StartWorkflowRun: %v", err)
	}
	run := started.Run
	if run.State != client.RunRunning || run.Version != 2 || len(run.Steps) != 2 || run.Steps[0].State != "WAITING_SIGNAL" {
		t.Fatalf("started: %+v", run)
	}
	// A queue that a running run's version references cannot be retired.
	_, err = e.c.RetireQueue(ctx, q.ID, e.key("retire-queue-early"), client.RetireResourceRequest{ExpectedRevision: q.Revision, Reason: "early"})
	wantCode(t, err, client.CodeResourceBusy)

	signalled, err := e.c.SignalWorkflowRun(ctx, run.ID, e.key("signal"), "approve", json.RawMessage(`{"by":"ops"}`))
	if err != nil {
		t.Fatalf("SignalWorkflowRun: %v", err)
	}
	apply := signalled.Run.Steps[1]
	if signalled.Run.Steps[0].State != "SUCCEEDED" || apply.State != "ACTIVE" || len(apply.TaskIDs) != 1 {
		t.Fatalf("after the signal: %+v", signalled.Run.Steps)
	}
	replay, err := e.c.SignalWorkflowRun(ctx, run.ID, e.key("signal"), "approve", json.RawMessage(`{"by":"ops"}`))
	if err != nil || !replay.Deduplicated {
		t.Fatalf("signal replay: %+v %v", replay, err)
	}
	_, err = e.c.SignalWorkflowRun(ctx, run.ID, e.key("signal-again"), "approve", nil)
	wantCode(t, err, client.CodeStateConflict) // one signal per name

	// The step's task carries the run's key, its workflow reference and a payload built from the run.
	stepTask, err := e.c.GetTask(ctx, apply.TaskIDs[0])
	if err != nil || stepTask.ConcurrencyKey != start.ConcurrencyKey || stepTask.Workflow == nil || stepTask.Workflow.RunID != run.ID || stepTask.Workflow.Step != "apply" {
		t.Fatalf("step task: %+v %v", stepTask, err)
	}
	var payload struct {
		Input   map[string]string          `json:"input"`
		Params  map[string]string          `json:"params"`
		Parents map[string]json.RawMessage `json:"parents"`
	}
	if err := json.Unmarshal(stepTask.Payload, &payload); err != nil || payload.Input["object"] != "objects/42" || payload.Params["mode"] != "full" || payload.Parents["approve"] == nil {
		t.Fatalf("step payload %s: %v", stepTask.Payload, err)
	}

	paused, err := e.c.PauseWorkflowRun(ctx, run.ID, e.key("pause"))
	if err != nil || paused.Run.State != client.RunPaused {
		t.Fatalf("PauseWorkflowRun: %+v %v", paused, err)
	}
	cancelled, err := e.c.CancelWorkflowRun(ctx, run.ID, e.key("cancel"), "go client test")
	if err != nil || cancelled.Run.State != client.RunCancelled || cancelled.Run.FinishedAt == nil {
		t.Fatalf("CancelWorkflowRun: %+v %v", cancelled, err)
	}
	_, err = e.c.ResumeWorkflowRun(ctx, run.ID, e.key("resume"))
	wantCode(t, err, client.CodeStateConflict) // a final run takes no command
	if tk, err := e.c.GetTask(ctx, apply.TaskIDs[0]); err != nil || tk.State != client.TaskCancelled {
		t.Fatalf("the step's waiting task after the cancel: %+v %v", tk, err)
	}

	runs, err := e.c.ListWorkflowRuns(ctx, client.ListRunsQuery{WorkflowID: wf.ID})
	if err != nil || len(runs.Runs) != 1 || runs.Runs[0].ID != run.ID || runs.Runs[0].Steps != nil {
		t.Fatalf("ListWorkflowRuns: %+v %v", runs, err)
	}
	if got, err := e.c.GetWorkflowRun(ctx, run.ID); err != nil || string(got.Input) != `{"object":"objects/42"}` {
		t.Fatalf("GetWorkflowRun: %+v %v", got, err)
	}
	if vs, err := e.c.ListWorkflowVersions(ctx, wf.ID); err != nil || len(vs) != 2 {
		t.Fatalf("ListWorkflowVersions: %+v %v", vs, err)
	}
	if v, err := e.c.GetWorkflowVersion(ctx, wf.ID, 2); err != nil || v.Steps[0].Signal.TimeoutSeconds != 3600 {
		t.Fatalf("GetWorkflowVersion: %+v %v", v, err)
	}
	if l, err := e.c.ListWorkflows(ctx, client.Page{Limit: 500}); err != nil || len(l.Workflows) == 0 {
		t.Fatalf("ListWorkflows: %+v %v", l, err)
	}

	retired, err := e.c.RetireWorkflow(ctx, wf.ID, e.key("retire"), client.RetireResourceRequest{ExpectedRevision: published.Workflow.Revision, Reason: "done"})
	if err != nil || retired.Workflow.RetiredAt == nil {
		t.Fatalf("RetireWorkflow: %+v %v", retired, err)
	}
	_, err = e.c.StartWorkflowRun(ctx, wf.ID, e.key("start-retired"), client.StartRunRequest{ConcurrencyKey: "object/late"})
	wantCode(t, err, client.CodeResourceRetired)
	if got, err := e.c.GetWorkflow(ctx, wf.ID); err != nil || got.RetiredAt == nil {
		t.Fatalf("GetWorkflow: %+v %v", got, err)
	}
}
