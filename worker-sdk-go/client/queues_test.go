package client_test

import (
	"math"
	"testing"

	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
)

func TestQueueLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := ctxOf(t)
	req := client.CreateQueueRequest{Name: e.name("q"), LeaseSeconds: 60,
		Retry: &client.RetryPolicy{MaxAttempts: 5, InitialBackoffMS: 0, MaxBackoffMS: 1000, Multiplier: 1.5}}
	created, err := e.c.CreateQueue(ctx, e.key("create"), req)
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	q := created.Queue
	if created.Deduplicated || q.LeaseSeconds != 60 || q.Retry != *req.Retry || q.Paused || q.RetiredAt != nil {
		t.Fatalf("created: %+v", created)
	}
	replay, err := e.c.CreateQueue(ctx, e.key("create"), req)
	if err != nil || !replay.Deduplicated || replay.Queue.ID != q.ID {
		t.Fatalf("replay: %+v %v", replay, err)
	}
	_, err = e.c.CreateQueue(ctx, e.key("create-again"), req)
	wantCode(t, err, client.CodeStateConflict) // names are unique in a namespace forever

	paused, err := e.c.PauseQueue(ctx, q.ID, e.key("pause"), q.Revision)
	if err != nil || !paused.Queue.Paused || paused.Queue.Revision != q.Revision+1 {
		t.Fatalf("PauseQueue: %+v %v", paused, err)
	}
	_, err = e.c.ResumeQueue(ctx, q.ID, e.key("resume-stale"), q.Revision)
	wantCode(t, err, client.CodeStateConflict)
	resumed, err := e.c.ResumeQueue(ctx, q.ID, e.key("resume"), paused.Queue.Revision)
	if err != nil || resumed.Queue.Paused {
		t.Fatalf("ResumeQueue: %+v %v", resumed, err)
	}

	// A queue with an unfinished task cannot be retired; nothing changes.
	tk := e.submit(t, q.ID, e.key("task"))
	retire := client.RetireResourceRequest{ExpectedRevision: resumed.Queue.Revision, Reason: "go client test"}
	_, err = e.c.RetireQueue(ctx, q.ID, e.key("retire-busy"), retire)
	if apiErr := wantCode(t, err, client.CodeResourceBusy); apiErr.Message == "" {
		t.Fatalf("RESOURCE_BUSY without a reason: %+v", apiErr)
	}
	stats, err := e.c.GetQueueStats(ctx, q.ID)
	if err != nil || stats.Waiting != 1 || len(stats.Minutes) != 15 {
		t.Fatalf("GetQueueStats: %+v %v", stats, err)
	}
	if _, err := e.c.CancelTask(ctx, tk.ID, e.key("cancel"), ""); err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	_, err = e.c.RetireQueue(ctx, q.ID, e.key("retire-stale"), client.RetireResourceRequest{ExpectedRevision: q.Revision, Reason: "stale"})
	wantCode(t, err, client.CodeStateConflict)

	retired, err := e.c.RetireQueue(ctx, q.ID, e.key("retire"), retire)
	if err != nil || retired.Queue.RetiredAt == nil || !retired.Queue.Paused {
		t.Fatalf("RetireQueue: %+v %v", retired, err)
	}
	again, err := e.c.RetireQueue(ctx, q.ID, e.key("retire"), retire)
	if err != nil || !again.Deduplicated {
		t.Fatalf("retire replay: %+v %v", again, err)
	}
	_, err = e.c.SubmitTask(ctx, e.key("after-retire"), task(q.ID, `{}`))
	wantCode(t, err, client.CodeResourceRetired)

	// Retired queues are still listed and read.
	all, err := e.c.ListQueues(ctx)
	if err != nil || !containsQueue(all, q.ID) {
		t.Fatalf("ListQueues: %v (found %v)", err, containsQueue(all, q.ID))
	}
	workers, err := e.c.ListWorkers(ctx, q.ID)
	if err != nil || len(workers) != 0 {
		t.Fatalf("ListWorkers: %+v %v", workers, err)
	}
}

// A revision near 2^64 must survive the round trip in both directions: decoded from the queue,
// sent back as expected_revision, bumped to 2^64-1 by the server.
func TestQueueRevisionIsUint64(t *testing.T) {
	e := newEnv(t)
	ctx := ctxOf(t)
	q := e.newQueue(t)
	const near = math.MaxUint64 - 1 // not representable as float64 (it rounds to 2^64)
	if _, err := e.db(t).ExecContext(ctx, "UPDATE queues SET revision = ? WHERE id = ?", uint64(near), q.ID); err != nil {
		t.Fatalf("setting the revision: %v", err)
	}
	got, err := e.c.GetQueue(ctx, q.ID)
	if err != nil || got.Revision != near {
		t.Fatalf("GetQueue revision: %+v %v", got, err)
	}
	paused, err := e.c.PauseQueue(ctx, q.ID, e.key("pause"), near)
	if err != nil || paused.Queue.Revision != math.MaxUint64 {
		t.Fatalf("PauseQueue at 2^64-2: %+v %v", paused, err)
	}
}

func containsQueue(qs []client.Queue, id string) bool {
	for _, q := range qs {
		if q.ID == id {
			return true
		}
	}
	return false
}
