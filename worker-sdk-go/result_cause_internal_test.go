package orbit

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// After a timed-out drain (ctx cancelled with an *UnknownOutcomeError cause), the ctx's error
// reports unknown; an error of the handler's own keeps its mapping.
func TestDrainCauseMapping(t *testing.T) {
	drained, cancel := context.WithCancelCause(context.Background())
	closed := &UnknownOutcomeError{Err: errors.New("orbit: the worker closed before the handler finished")}
	cancel(closed)
	lost, cancelLost := context.WithCancelCause(context.Background())
	cancelLost(&LeaseLostError{AttemptID: "a", Reason: "LEASE_LOST"})
	for _, c := range []struct {
		name    string
		ctx     context.Context
		err     error
		outcome string
		code    string
	}{
		{"ctx.Err", drained, drained.Err(), "unknown", "UNKNOWN_OUTCOME"},
		{"wrapped", drained, fmt.Errorf("fetch: %w", drained.Err()), "unknown", "UNKNOWN_OUTCOME"},
		{"cause", drained, context.Cause(drained), "unknown", "UNKNOWN_OUTCOME"},
		{"own", drained, errors.New("boom"), "failed", "HANDLER_ERROR"},
		{"permanent", drained, &PermanentError{Code: "STOPPED", Err: context.Cause(drained)}, "failed", "STOPPED"},
		{"retry", drained, Retry(drained.Err(), 0), "retry", "RETRYABLE"},
		{"unknown", drained, &UnknownOutcomeError{Code: "MINE", Err: drained.Err()}, "unknown", "MINE"},
		{"lost", lost, lost.Err(), "failed", "HANDLER_ERROR"},
	} {
		r := handlerErrorResult(c.ctx, "a", c.err)
		if r.Outcome != c.outcome || r.Error == nil || r.Error.Code != c.code {
			t.Errorf("%s: %s %+v, want %s %s", c.name, r.Outcome, r.Error, c.outcome, c.code)
		}
	}
	if r := handlerErrorResult(drained, "a", drained.Err()); r.Error.Message != "orbit: the worker closed before the handler finished" {
		t.Errorf("message %q", r.Error.Message)
	}
}
