// Workflow example, the Go twin of examples/workflow/main.ts: publishes a workflow of five steps
//
//	fetch ──▶ index (one task per fetched document) ──▶ approve (waits for the signal "approved")
//	      ──▶ publish (reads index's outputs and the approval) ──▶ undo (compensation: runs only
//	      if a step failed, so skipped here)
//
// starts a run, runs a Go worker for the step handlers, sends the signal once the run waits for
// it, waits for the run to end and prints exactly one line:
//
//	run=SUCCEEDED steps=5 tasks=7 signal=consumed
//
// and exits non-zero on any failure, within 20 s. From worker-sdk-go/: go run ./examples/workflow
// (the credential needs workflows:manage, workflows:run, queues:manage and workers:*).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	orbit "github.com/orbit-tasks/orbit/worker-sdk-go"
	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
	"github.com/orbit-tasks/orbit/worker-sdk-go/examples/internal/examplekit"
)

const documents = 5

type doc struct {
	Doc   int    `json:"doc"`
	Batch string `json:"batch"`
}

func main() { examplekit.RunMain("workflow", 20*time.Second, run) }

func run(ctx context.Context) error {
	s, err := examplekit.Load()
	if err != nil {
		return err
	}
	api := s.API
	tag := s.RunID
	q, err := api.CreateQueue(ctx, "workflow-example-queue-"+tag, client.CreateQueueRequest{Name: "workflow-example-" + tag})
	if err != nil {
		return permission(err)
	}

	// The run id of every step task a handler ran (7 expected, all of this run).
	var mu sync.Mutex
	var handled []string
	step := func(fn func(p *orbit.StepPayload) (any, error)) orbit.HandlerFunc {
		return func(ctx context.Context, e *orbit.Event) (any, error) {
			p, err := e.Step()
			if err != nil {
				return nil, err
			}
			mu.Lock()
			handled = append(handled, e.Task.Workflow.RunID)
			mu.Unlock()
			return fn(p)
		}
	}
	handlers := []orbit.Handler{
		// One task: the documents to index, an array (the for_each source of `index`).
		{Name: "doc.fetch", Func: step(func(p *orbit.StepPayload) (any, error) {
			var in struct{ Batch string }
			if err := json.Unmarshal(p.Input, &in); err != nil {
				return nil, err
			}
			docs := make([]doc, documents)
			for i := range docs {
				docs[i] = doc{Doc: i + 1, Batch: in.Batch}
			}
			return docs, nil
		})},
		// One task per fetched document, in element order.
		{Name: "doc.index", Func: step(func(p *orbit.StepPayload) (any, error) {
			var d doc
			if err := json.Unmarshal(p.Item, &d); err != nil {
				return nil, err
			}
			return map[string]any{"indexed": d.Doc, "position": p.Index}, nil
		})},
		// After the approval: the parents' outputs are the index step's array and the signal's payload.
		{Name: "doc.publish", Func: step(func(p *orbit.StepPayload) (any, error) {
			var index []json.RawMessage
			var approve struct{ By string }
			if err := json.Unmarshal(p.Parents["index"], &index); err != nil {
				return nil, err
			}
			if err := json.Unmarshal(p.Parents["approve"], &approve); err != nil {
				return nil, err
			}
			return map[string]any{"published": len(index), "approved_by": approve.By}, nil
		})},
		{Name: "doc.undo", Func: step(func(*orbit.StepPayload) (any, error) {
			return nil, errors.New("the compensation step ran although no step failed")
		})},
	}
	w, err := orbit.NewWorker(orbit.Options{URL: s.URL, Token: s.Token, Queues: []string{q.Queue.ID}, Capacity: 8, Handlers: handlers,
		Reconnect: orbit.ReconnectPolicy{MaxAttempts: 5}, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		return err
	}
	wctx, drain := context.WithCancel(context.Background())
	defer drain()
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(wctx) }()
	select {
	case <-w.Ready():
	case err := <-stopped:
		return fmt.Errorf("worker stopped: %w", err)
	case <-ctx.Done():
		return examplekit.Failf("the worker did not connect to %s", s.URL)
	}

	task := func(handler string) *client.WorkflowStepTask {
		return &client.WorkflowStepTask{QueueID: q.Queue.ID, Handler: handler, HandlerVersion: "v1", PayloadVersion: "v1"}
	}
	created, err := api.CreateWorkflow(ctx, "workflow-example-create-"+tag, client.CreateWorkflowRequest{Name: "publish-docs-" + tag,
		Version: client.WorkflowVersionInput{Steps: []client.WorkflowStep{
			{Key: "fetch", Task: task("doc.fetch")},
			{Key: "index", After: []string{"fetch"}, ForEach: "fetch", Task: task("doc.index")},
			{Key: "approve", After: []string{"index"}, Signal: &client.WorkflowSignal{Name: "approved", TimeoutSeconds: 600}},
			{Key: "publish", After: []string{"index", "approve"}, Task: task("doc.publish")},
			{Key: "undo", After: []string{"publish"}, RunIf: "any_failed", Task: task("doc.undo")},
		}}})
	if err != nil {
		return permission(err)
	}
	started, err := api.StartWorkflowRun(ctx, created.Workflow.ID, "workflow-example-run-"+tag, client.StartRunRequest{Input: []byte(`{"batch":"` + tag + `"}`)})
	if err != nil {
		return permission(err)
	}

	// The run reaches the signal step once every document is indexed; then the approval is sent.
	runID, r, signalled := started.Run.ID, &started.Run, false
	for r.State != client.RunSucceeded && r.State != client.RunFailed && r.State != client.RunCancelled {
		time.Sleep(50 * time.Millisecond)
		if r, err = api.GetWorkflowRun(ctx, runID); err != nil {
			return err
		}
		if a := stepOf(r, "approve"); !signalled && a != nil && a.State == "WAITING_SIGNAL" {
			if _, err := api.SignalWorkflowRun(ctx, runID, "workflow-example-signal-"+tag, "approved", []byte(`{"by":"example-reviewer"}`)); err != nil {
				return err
			}
			signalled = true
		}
	}
	drain()
	if err := <-stopped; err != nil {
		return fmt.Errorf("worker: %w", err)
	}

	tasks := 0
	for _, st := range r.Steps {
		tasks += len(st.TaskIDs)
	}
	approve := stepOf(r, "approve")
	var approval struct{ By string }
	consumed := approve != nil && approve.State == "SUCCEEDED" && json.Unmarshal(approve.Output, &approval) == nil && approval.By == "example-reviewer"
	signal := "missing"
	switch {
	case consumed:
		signal = "consumed"
	case approve != nil:
		signal = approve.State
	}
	fmt.Printf("run=%s steps=%d tasks=%d signal=%s\n", r.State, len(r.Steps), tasks, signal)
	if r.State != client.RunSucceeded { // which step failed and why (stderr; stdout keeps its one line)
		for _, st := range r.Steps {
			fmt.Fprintf(os.Stderr, "step %s: %s %+v\n", st.Key, st.State, st.Error)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	ok := r.State == client.RunSucceeded && consumed && tasks == documents+2 && len(handled) == tasks
	for _, id := range handled {
		ok = ok && id == runID
	}
	if undo := stepOf(r, "undo"); !ok || undo == nil || undo.State != "SKIPPED" {
		return examplekit.Failf("the run did not go as it should (see the line above)")
	}
	return nil
}

func stepOf(r *client.WorkflowRun, key string) *client.WorkflowRunStep {
	for i := range r.Steps {
		if r.Steps[i].Key == key {
			return &r.Steps[i]
		}
	}
	return nil
}

// permission says what a credential made before workflows existed lacks.
func permission(err error) error {
	var api *client.APIError
	if errors.As(err, &api) && api.Code == client.CodePermissionDenied {
		return examplekit.Failf("%s: the credential needs workflows:manage and workflows:run (credentials made before workflows existed lack them; bootstrap a new one)", api.Message)
	}
	return err
}
