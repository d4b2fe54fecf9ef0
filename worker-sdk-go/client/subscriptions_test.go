package client_test

import (
	"testing"

	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
)

// The recommended order of a clean-up: consume and ack every delivery, retire the subscription,
// then the queue. Each step before its time is RESOURCE_BUSY.
func TestSubscriptionDeliveriesAndRetirement(t *testing.T) {
	e := newEnv(t)
	ctx := ctxOf(t)
	q := e.newQueue(t)
	created, err := e.c.CreateSubscription(ctx, e.key("create"), client.CreateSubscriptionRequest{
		Name: e.name("sub"), QueueID: q.ID, EventTypes: []string{client.EventTaskCancelled, client.EventTaskSucceeded}})
	if err != nil {
		t.Fatalf("CreateSubscription: %v", err)
	}
	sub := created.Subscription
	if !sub.Enabled || sub.Paused || sub.RetiredSequence != nil || len(sub.EventTypes) != 2 {
		t.Fatalf("created: %+v", sub)
	}

	// A cancelled task appends a task.cancelled event.
	tk := e.submit(t, q.ID, e.key("task"))
	if _, err := e.c.CancelTask(ctx, tk.ID, e.key("cancel"), "for the event"); err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	retire := client.RetireResourceRequest{ExpectedRevision: sub.Revision, Reason: "go client test"}
	_, err = e.c.RetireSubscription(ctx, sub.ID, e.key("retire-early"), retire)
	wantCode(t, err, client.CodeResourceBusy) // an event it must receive is not consumed
	_, err = e.c.RetireQueue(ctx, q.ID, e.key("retire-queue-early"), client.RetireResourceRequest{ExpectedRevision: q.Revision, Reason: "early"})
	wantCode(t, err, client.CodeResourceBusy) // a non-retired subscription targets it

	leased, err := e.c.LeaseDeliveries(ctx, sub.ID, 10, 30)
	if err != nil || len(leased) != 1 {
		t.Fatalf("LeaseDeliveries: %+v %v", leased, err)
	}
	d := leased[0]
	if d.State != "LEASED" || d.Event == nil || d.Event.Type != client.EventTaskCancelled || d.Event.TaskID != tk.ID ||
		d.Sequence == 0 || d.Event.Sequence != d.Sequence || d.Event.Result.Outcome != "cancelled" {
		t.Fatalf("delivery: %+v event %+v", d, d.Event)
	}
	history, err := e.c.ListDeliveries(ctx, sub.ID, "LEASED", client.Page{Limit: 10})
	if err != nil || len(history.Deliveries) != 1 || history.Deliveries[0].ID != d.ID || history.NextCursor != "" {
		t.Fatalf("ListDeliveries: %+v %v", history, err)
	}
	if n, err := e.c.AckDeliveries(ctx, sub.ID, []string{d.ID}); err != nil || n != 1 {
		t.Fatalf("AckDeliveries: %d %v", n, err)
	}
	if n, err := e.c.AckDeliveries(ctx, sub.ID, []string{d.ID}); err != nil || n != 0 {
		t.Fatalf("second ack: %d %v", n, err)
	}

	paused, err := e.c.PauseSubscription(ctx, sub.ID, e.key("pause"), sub.Revision)
	if err != nil || !paused.Subscription.Paused || paused.Subscription.Revision != sub.Revision+1 {
		t.Fatalf("PauseSubscription: %+v %v", paused, err)
	}
	_, err = e.c.RetireSubscription(ctx, sub.ID, e.key("retire-stale"), retire)
	wantCode(t, err, client.CodeStateConflict)

	resumed, err := e.c.ResumeSubscription(ctx, sub.ID, e.key("resume"), paused.Subscription.Revision)
	if err != nil || resumed.Subscription.Paused {
		t.Fatalf("ResumeSubscription: %+v %v", resumed, err)
	}

	// Retired once everything is acked.
	retire.ExpectedRevision = resumed.Subscription.Revision
	retired, err := e.c.RetireSubscription(ctx, sub.ID, e.key("retire"), retire)
	if err != nil {
		t.Fatalf("RetireSubscription: %v", err)
	}
	rs := retired.Subscription
	if rs.Enabled || rs.RetiredAt == nil || rs.RetiredSequence == nil || *rs.RetiredSequence < d.Sequence || rs.Cursor != *rs.RetiredSequence {
		t.Fatalf("retired: %+v", rs)
	}
	got, err := e.c.GetSubscription(ctx, sub.ID)
	if err != nil || got.RetiredAt == nil {
		t.Fatalf("GetSubscription: %+v %v", got, err)
	}
	subs, err := e.c.ListSubscriptions(ctx)
	if err != nil || len(subs) == 0 {
		t.Fatalf("ListSubscriptions: %+v %v", subs, err)
	}

	q2, err := e.c.GetQueue(ctx, q.ID)
	if err != nil {
		t.Fatalf("GetQueue: %v", err)
	}
	if _, err := e.c.RetireQueue(ctx, q.ID, e.key("retire-queue"), client.RetireResourceRequest{ExpectedRevision: q2.Revision, Reason: "done"}); err != nil {
		t.Fatalf("RetireQueue after the subscription: %v", err)
	}
}
