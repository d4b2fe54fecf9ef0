// resource-lifecycle, the Go twin of examples/resource-lifecycle/main.ts: creates an empty queue
// and a subscription on it, then retires them in the recommended order (the subscription first,
// then the queue), printing the ids and, when a retirement is refused, the blocking reason. It
// only touches the resources it created in this run. From worker-sdk-go/:
//
//	go run ./examples/resource-lifecycle
//
// Every command carries an explicit idempotency key derived from this run's id, so re-sending one
// (after a timeout, say) replays its receipt instead of acting twice.
package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
	"github.com/orbit-tasks/orbit/worker-sdk-go/examples/internal/examplekit"
)

func main() { examplekit.RunMain("resource-lifecycle", 20*time.Second, run) }

func run(ctx context.Context) error {
	s, err := examplekit.Load()
	if err != nil {
		return err
	}
	api := s.API
	runID := s.RunID
	key := func(step string) string { return "resource-lifecycle-" + runID + "-" + step }

	q, err := api.CreateQueue(ctx, key("queue"), client.CreateQueueRequest{Name: "lifecycle-" + runID})
	if err != nil {
		return err
	}
	fmt.Printf("queue_id=%s name=%s\n", q.Queue.ID, q.Queue.Name)
	sub, err := api.CreateSubscription(ctx, key("subscription"), client.CreateSubscriptionRequest{Name: "lifecycle-" + runID, QueueID: q.Queue.ID,
		EventTypes: []string{client.EventTaskSucceeded, client.EventTaskFailed, client.EventTaskNeedsReview}})
	if err != nil {
		return err
	}
	fmt.Printf("subscription_id=%s cursor=%d\n", sub.Subscription.ID, sub.Subscription.Cursor)

	// Recommended order: producers stopped and executions drained (nothing was submitted here),
	// every delivery consumed and acknowledged, then the subscription, then the queue. A retirement
	// names the revision it expects: a change meanwhile is STATE_CONFLICT instead of a surprise.
	current, err := api.GetSubscription(ctx, sub.Subscription.ID)
	if err != nil {
		return err
	}
	rs, err := api.RetireSubscription(ctx, sub.Subscription.ID, key("retire-subscription"),
		client.RetireResourceRequest{ExpectedRevision: current.Revision, Reason: "resource-lifecycle example finished"})
	if err != nil {
		return refused("subscription", sub.Subscription.ID, err)
	}
	seq := "none"
	if rs.Subscription.RetiredSequence != nil {
		seq = strconv.FormatUint(*rs.Subscription.RetiredSequence, 10)
	}
	fmt.Printf("subscription_retired=true retired_sequence=%s\n", seq)

	queue, err := api.GetQueue(ctx, q.Queue.ID)
	if err != nil {
		return err
	}
	rq, err := api.RetireQueue(ctx, q.Queue.ID, key("retire-queue"),
		client.RetireResourceRequest{ExpectedRevision: queue.Revision, Reason: "resource-lifecycle example finished"})
	if err != nil {
		return refused("queue", q.Queue.ID, err)
	}
	fmt.Printf("queue_retired=true retired_at=%s\n", rq.Queue.RetiredAt.UTC().Format(time.RFC3339Nano))
	return nil
}

// refused reports a refused retirement with the resource id and the blocking reason, never forced.
func refused(kind, id string, err error) error {
	var api *client.APIError
	if errors.As(err, &api) {
		fmt.Printf("%s_retired=false %s_id=%s code=%s reason=%q\n", kind, kind, id, api.Code, api.Message)
	} else {
		fmt.Printf("%s_retired=false %s_id=%s error=%q\n", kind, kind, id, err.Error())
	}
	return examplekit.Failf("the %s was not retired", kind)
}
