package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
)

func TestSubmitReplayAndConflict(t *testing.T) {
	e := newEnv(t)
	ctx := ctxOf(t)
	k := e.key("op-001")
	req := task(e.queueID, `{"object_ref":"objects/42","n":9007199254740991}`)
	req.ConcurrencyKey = "object/" + e.id
	req.BusinessKey = "biz-" + e.id

	first, err := e.c.SubmitTask(ctx, k, req)
	if err != nil {
		t.Fatalf("SubmitTask: %v", err)
	}
	if first.Deduplicated || first.Task.State != client.TaskWaiting || first.Task.ConcurrencyKey != req.ConcurrencyKey {
		t.Fatalf("first submit: %+v", first)
	}
	// The payload comes back as sent (RawMessage: no float64 on the way).
	got, err := e.c.GetTask(ctx, first.Task.ID)
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	var p struct {
		N json.Number `json:"n"`
	}
	if err := json.Unmarshal(got.Payload, &p); err != nil || p.N != "9007199254740991" {
		t.Fatalf("payload %s: %v", got.Payload, err)
	}

	// Same key, same content (keys in another order): the frozen receipt, nothing re-executed.
	req.Payload = json.RawMessage(`{"n":9007199254740991, "object_ref":"objects/42"}`)
	replay, err := e.c.SubmitTask(ctx, k, req)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !replay.Deduplicated || replay.Task.ID != first.Task.ID {
		t.Fatalf("replay: %+v", replay)
	}

	// Same key, other content.
	req.Priority = 5
	_, err = e.c.SubmitTask(ctx, k, req)
	apiErr := wantCode(t, err, client.CodeIdempotencyConflict)
	if apiErr.Status != http.StatusConflict || apiErr.RequestID == "" {
		t.Fatalf("conflict: %+v", apiErr)
	}

	list, err := e.c.ListTasks(ctx, client.ListTasksQuery{BusinessKey: req.BusinessKey, Page: client.Page{Limit: 10}})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != first.Task.ID || list.Tasks[0].Payload != nil {
		t.Fatalf("ListTasks: %+v %v", list, err)
	}
	attempts, err := e.c.ListAttempts(ctx, first.Task.ID)
	if err != nil || len(attempts) != 0 {
		t.Fatalf("ListAttempts of a waiting task: %+v %v", attempts, err)
	}

	// Cancel while WAITING; a second cancel (another command) finds it CANCELLED.
	cancelled, err := e.c.CancelTask(ctx, first.Task.ID, e.key("cancel"), "test done")
	if err != nil || cancelled.Task.State != client.TaskCancelled || cancelled.Task.Result == nil || cancelled.Task.Result.Outcome != "cancelled" {
		t.Fatalf("CancelTask: %+v %v", cancelled, err)
	}
	_, err = e.c.CancelTask(ctx, first.Task.ID, e.key("cancel-again"), "")
	wantCode(t, err, client.CodeStateConflict)
	_, err = e.c.ResolveTask(ctx, first.Task.ID, e.key("resolve"), client.ResolveTaskRequest{Resolution: "retry"})
	wantCode(t, err, client.CodeStateConflict)
}

func TestSubmitRefusals(t *testing.T) {
	e := newEnv(t)
	ctx := ctxOf(t)

	// Never sent: the key is the caller's to choose and keep.
	_, err := e.c.SubmitTask(ctx, "", task(e.queueID, `{}`))
	if apiErr := wantCode(t, err, client.CodeInvalidArgument); apiErr.Status != 0 || apiErr.Details["field"] != "Idempotency-Key" {
		t.Fatalf("empty key: %+v", apiErr)
	}
	_, err = e.c.SubmitTask(ctx, "has space", task(e.queueID, `{}`))
	wantCode(t, err, client.CodeInvalidArgument)

	// Schema violations come back with every violation listed.
	bad := task(e.queueID, `{}`)
	bad.Priority = 10
	bad.Handler = "no spaces allowed"
	_, err = e.c.SubmitTask(ctx, e.key("bad"), bad)
	apiErr := wantCode(t, err, client.CodeInvalidArgument)
	if v, ok := apiErr.Details["violations"].([]any); apiErr.Status != http.StatusBadRequest || !ok || len(v) != 2 {
		t.Fatalf("violations: %+v", apiErr)
	}

	_, err = e.c.SubmitTask(ctx, e.key("unknown-queue"), task("00000000000000000000000000000000", `{}`))
	wantCode(t, err, client.CodeNotFound)
	_, err = e.c.GetTask(ctx, "00000000000000000000000000000000")
	wantCode(t, err, client.CodeNotFound)
	_, err = e.c.GetAttempt(ctx, "00000000000000000000000000000000")
	wantCode(t, err, client.CodeNotFound)

	// The server refuses a payload number it could not keep exact; the field is named.
	_, err = e.c.SubmitTask(ctx, e.key("big"), task(e.queueID, `{"big":18446744073709551615}`))
	if apiErr := wantCode(t, err, client.CodeInvalidArgument); apiErr.Details["field"] != "payload.big" {
		t.Fatalf("big number: %+v", apiErr)
	}

	bad = task(e.queueID, `{}`)
	bad.ConcurrencyKey = " padded "
	_, err = e.c.SubmitTask(ctx, e.key("padded-key"), bad)
	wantCode(t, err, client.CodeInvalidArgument)

	_, err = client.New(e.url, "orb_not-a-token").GetTask(ctx, "00000000000000000000000000000000")
	wantCode(t, err, client.CodeUnauthenticated)

	// A transport error is not an APIError: the caller's context ended, nothing was answered.
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = e.c.SubmitTask(done, e.key("cancelled-ctx"), task(e.queueID, `{}`))
	if !errors.Is(err, context.Canceled) || client.CodeOf(err) != "" {
		t.Fatalf("cancelled context: %v", err)
	}
}

func TestSubmitTasksBatch(t *testing.T) {
	e := newEnv(t)
	ctx := ctxOf(t)
	single, err := e.c.SubmitTask(ctx, e.key("item-0"), task(e.queueID, `{"i":0}`))
	if err != nil {
		t.Fatalf("SubmitTask: %v", err)
	}
	bad := task(e.queueID, `{}`)
	bad.Priority = 42
	items := []client.BatchItem{
		{IdempotencyKey: e.key("item-0"), SubmitTaskRequest: task(e.queueID, `{"i":0}`)}, // the single submit's command
		{IdempotencyKey: e.key("item-1"), SubmitTaskRequest: task(e.queueID, `{"i":1}`)},
		{IdempotencyKey: e.key("item-0"), SubmitTaskRequest: task(e.queueID, `{"i":"other"}`)},
		{IdempotencyKey: e.key("item-3"), SubmitTaskRequest: bad},
	}
	res, err := e.c.SubmitTasks(ctx, items)
	if err != nil {
		t.Fatalf("SubmitTasks: %v", err)
	}
	if len(res) != 4 {
		t.Fatalf("want 4 results, got %d", len(res))
	}
	if res[0].Status != 200 || res[0].Receipt == nil || !res[0].Receipt.Deduplicated || res[0].Receipt.Task.ID != single.Task.ID {
		t.Fatalf("item 0 (replay of the single submit): %+v", res[0])
	}
	if res[1].Status != 201 || res[1].Err != nil || res[1].Receipt.Deduplicated {
		t.Fatalf("item 1: %+v", res[1])
	}
	if res[2].Err == nil || res[2].Err.Code != client.CodeIdempotencyConflict || res[2].Status != 409 {
		t.Fatalf("item 2: %+v", res[2])
	}
	if res[3].Err == nil || res[3].Err.Code != client.CodeInvalidArgument {
		t.Fatalf("item 3: %+v", res[3])
	}

	// A missing key fails the call before anything is sent.
	_, err = e.c.SubmitTasks(ctx, []client.BatchItem{{SubmitTaskRequest: task(e.queueID, `{}`)}})
	wantCode(t, err, client.CodeInvalidArgument)
	// An empty batch is one 400 for the whole request.
	_, err = e.c.SubmitTasks(ctx, nil)
	if apiErr := wantCode(t, err, client.CodeInvalidArgument); apiErr.Status != http.StatusBadRequest {
		t.Fatalf("empty batch: %+v", apiErr)
	}
	for _, id := range []string{single.Task.ID, res[1].Receipt.Task.ID} {
		if _, err := e.c.CancelTask(ctx, id, e.key("cancel", id), ""); err != nil {
			t.Fatalf("CancelTask: %v", err)
		}
	}
}
