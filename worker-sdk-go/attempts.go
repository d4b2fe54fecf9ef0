package orbit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The attempts a worker holds, each from task.assign to its answered result: waiting (oldest
// first) for a run slot when the prefetched attempts outnumber free handlers, start confirmed
// before the handler runs, the handler with a ctx cancelled when the lease is lost, the result
// re-sent across reconnects until the gateway answers it.

type held struct {
	frame          *TaskAssign
	ctx            context.Context
	cancel         context.CancelCauseFunc
	phase          string // waiting (no start sent), starting, running, reporting
	slot           bool   // holds a run slot: from being taken until its handler returns or it is lost
	lost           bool
	leaseExpiresAt string
}

// finishedMemory bounds the finished attempt ids remembered to ignore a repeated task.assign.
const finishedMemory = 10_000

func (w *Worker) runAttempt(h *held) {
	defer w.attempts.Done()
	defer w.release(h)
	id := h.frame.AttemptID
	fn := w.handlerFor(h.frame)
	if fn == nil {
		// Not ours to run (hello's filter should have prevented it): failed without starting, loudly.
		w.log.Error("orbit worker: no handler for this task; failing it", "attempt_id", id, "handler", h.frame.Task.Handler, "handler_version", h.frame.Task.HandlerVersion)
		w.setPhase(h, "reporting")
		w.report(h, failed(id, "HANDLER_NOT_FOUND", fmt.Sprintf("no handler for %s@%s", h.frame.Task.Handler, h.frame.Task.HandlerVersion)))
		return
	}
	// Handler code must not run before start.ok; a start lost with the socket is re-sent on the
	// next session (a repeated start answers start.ok again).
	for {
		if w.isLost(h) {
			return
		}
		c := w.session()
		if c == nil || w.isLost(h) {
			return
		}
		ok, err := c.Start(context.Background(), id)
		if err == nil {
			w.mu.Lock()
			h.leaseExpiresAt = ok.LeaseExpiresAt
			w.mu.Unlock()
			break
		}
		if w.refused(h, err) {
			return
		}
		<-c.Done()
	}
	if !w.setPhase(h, "running") {
		return
	}
	e := newEvent(h.frame, w.opts.WorkerID)
	e.LeaseExpiresAt, _ = time.Parse(time.RFC3339Nano, h.leaseExpiresAt)
	result := w.callHandler(h, fn, e)
	// The handler is done: its run slot goes to the next waiting attempt while the result travels.
	w.mu.Lock()
	w.freeSlotLocked(h)
	w.mu.Unlock()
	if !w.setPhase(h, "reporting") {
		w.log.Warn("orbit worker: handler finished after its lease was lost; result not sent", "attempt_id", id)
		return
	}
	w.report(h, result)
}

// callHandler runs the handler, a panic included (reported as failed HANDLER_PANIC).
func (w *Worker) callHandler(h *held, fn HandlerFunc, e *Event) (r ResultInput) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("orbit worker: handler panicked", "attempt_id", e.AttemptID, "panic", p)
			r = failed(e.AttemptID, "HANDLER_PANIC", fmt.Sprint(p))
		}
	}()
	out, err := fn(h.ctx, e)
	if err != nil {
		return handlerErrorResult(h.ctx, e.AttemptID, err)
	}
	return successResult(e.AttemptID, out)
}

// report sends the result until the gateway answers it, across reconnects.
func (w *Worker) report(h *held, r ResultInput) {
	for {
		c := w.session()
		if c == nil {
			// The worker stopped with no session to send it on: the result is lost and the lease
			// of the RUNNING attempt runs out (the task goes to NEEDS_REVIEW).
			w.log.Warn("orbit worker: stopped before the result was sent; the lease will run out", "attempt_id", r.AttemptID, "outcome", r.Outcome)
			w.answered(ResultReport{AttemptID: r.AttemptID, Outcome: r.Outcome, Err: ErrResultNotSent})
			return
		}
		ok, err := c.Result(context.Background(), r)
		if err == nil {
			w.answered(ResultReport{AttemptID: r.AttemptID, Outcome: r.Outcome, TaskState: ok.TaskState, Deduplicated: ok.Deduplicated})
			return
		}
		var fe *FrameError
		if errors.As(err, &fe) {
			// The SDK refused its own frame (too big, invalid): report that instead, as failed —
			// once; a refusal of that one too (a tiny max_frame_bytes) ends the report.
			if r.Error != nil && r.Error.Code == "RESULT_REJECTED" {
				w.answered(ResultReport{AttemptID: r.AttemptID, Outcome: r.Outcome, Err: err})
				return
			}
			r = failed(r.AttemptID, "RESULT_REJECTED", fe.Message)
			continue
		}
		if w.refused(h, err) {
			w.answered(ResultReport{AttemptID: r.AttemptID, Outcome: r.Outcome, Err: err})
			return
		}
		<-c.Done()
	}
}

func (w *Worker) answered(r ResultReport) {
	if w.opts.OnResult != nil {
		w.opts.OnResult(r)
	}
}

func (w *Worker) handlerFor(f *TaskAssign) HandlerFunc {
	return w.handlers[f.Task.Handler][f.Task.HandlerVersion]
}

// setPhase moves the attempt on unless it was lost meanwhile (false then).
func (w *Worker) setPhase(h *held, phase string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if h.lost {
		return false
	}
	h.phase = phase
	return true
}

func (w *Worker) isLost(h *held) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return h.lost
}

// markLost: the attempt lost its right to execute (task.cancel, renew.ok's lost, hello.ok's lost);
// its handler's ctx is cancelled (a result being reported is kept: the gateway decides).
func (w *Worker) markLost(id, reason string) {
	w.mu.Lock()
	h := w.held[id]
	if h == nil || h.phase == "reporting" || h.lost {
		w.mu.Unlock()
		return
	}
	h.lost = true
	waiting := h.phase == "waiting"
	if !waiting {
		// The gateway stopped counting the attempt and may assign another at once: its run slot
		// goes to the next waiting attempt now, not when the handler returns (a handler that
		// ignores its ctx would hold it, and block new work, for ever). Freeing it again when the
		// handler returns is a no-op.
		w.freeSlotLocked(h)
	}
	w.mu.Unlock()
	if waiting {
		// Never started: nothing to cancel and nothing to report (an unstarted attempt's loss
		// consumes no attempt of the task; docs/worker-protocol.md, "Prefetch").
		w.log.Warn("orbit worker: lease lost before the attempt started; dropped", "attempt_id", id, "reason", reason)
		w.release(h)
		return
	}
	w.log.Warn("orbit worker: lease lost, cancelling handler", "attempt_id", id, "reason", reason)
	h.cancel(&LeaseLostError{AttemptID: id, Reason: reason})
}

// refused is true when the gateway answered about this attempt (LEASE_LOST, STATE_CONFLICT,
// NOT_FOUND): nothing more to do. False when the session dropped and the request must be re-sent.
func (w *Worker) refused(h *held, err error) bool {
	var ll *LeaseLostError
	var ge *GatewayError
	if !errors.As(err, &ll) && !(errors.As(err, &ge) && !ge.Fatal && ge.AttemptID != "") {
		return false
	}
	w.log.Warn("orbit worker: attempt refused by the gateway", "attempt_id", h.frame.AttemptID, "err", err)
	w.mu.Lock()
	reporting := h.phase == "reporting"
	if !reporting {
		h.lost = true
	}
	w.mu.Unlock()
	if !reporting {
		h.cancel(err)
	}
	return true
}

// release: the attempt is over (answered, lost or refused).
func (w *Worker) release(h *held) {
	h.cancel(context.Canceled)
	w.mu.Lock()
	defer w.mu.Unlock()
	id := h.frame.AttemptID
	if w.held[id] != h {
		return
	}
	w.freeSlotLocked(h)
	delete(w.held, id)
	if len(w.finished) >= finishedMemory {
		for old := range w.finished {
			delete(w.finished, old)
			break
		}
	}
	w.finished[id] = struct{}{}
	if len(w.held) == 0 && w.emptyCh != nil {
		close(w.emptyCh)
		w.emptyCh = nil
	}
}

// settle waits until nothing is held (attempts admitted meanwhile included); false on timeout.
func (w *Worker) settle(timeout time.Duration) bool {
	w.mu.Lock()
	if len(w.held) == 0 {
		w.mu.Unlock()
		return true
	}
	if w.emptyCh == nil {
		w.emptyCh = make(chan struct{})
	}
	ch := w.emptyCh
	w.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	case <-w.stopCh:
		return false
	}
}

func (w *Worker) resumeIDsLocked() []string {
	ids := make([]string, 0, len(w.held))
	for id := range w.held {
		if len(ids) == MaxIDsPerFrame {
			break
		}
		ids = append(ids, id)
	}
	return ids
}

func (w *Worker) knownLocked() map[string]KnownAttempt {
	known := make(map[string]KnownAttempt, len(w.held))
	for id, h := range w.held {
		known[id] = KnownAttempt{ConcurrencyKey: h.frame.Task.ConcurrencyKey, ConcurrencyToken: h.frame.ConcurrencyToken}
	}
	return known
}

// renewLoop renews every held lease every renew_ms while the session is open.
func (w *Worker) renewLoop(c *Conn) {
	h := c.Hello()
	every := time.Duration(h.RenewMs) * time.Millisecond
	if every <= 0 {
		every = max(time.Second, time.Duration(h.LeaseMs)*time.Millisecond/3)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		ids := make([]string, 0, len(w.held))
		for id := range w.held {
			ids = append(ids, id)
		}
		w.mu.Unlock()
		for len(ids) > 0 {
			batch := ids[:min(len(ids), MaxIDsPerFrame)]
			ids = ids[len(batch):]
			ctx, cancel := context.WithTimeout(context.Background(), every)
			ok, err := c.Renew(ctx, batch)
			cancel()
			if err != nil {
				break // the session closed; the next one resumes and renews
			}
			w.mu.Lock()
			for _, l := range ok.Leases {
				if a := w.held[l.AttemptID]; a != nil {
					a.leaseExpiresAt = l.LeaseExpiresAt
				}
			}
			w.mu.Unlock()
			for _, id := range ok.Lost {
				w.markLost(id, "LEASE_LOST")
			}
		}
	}
}
