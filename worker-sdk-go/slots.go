package orbit

import "context"

// A worker's run slots: at most Capacity attempts started at once, the prefetched rest held and
// waiting in FIFO order (docs/worker-protocol.md, "Prefetch"). The session declares Capacity +
// Prefetch to the gateway, and 0 while paused or draining.

// SetCapacity changes how many attempts the worker runs at once (0 pauses intake). The gateway
// is asked for n + Prefetch, or 0 when n is 0: a paused worker takes nothing new and still runs
// the attempts it was granted, at its last non-zero capacity.
func (w *Worker) SetCapacity(n int) error {
	if _, err := capacityFrame(n); err != nil {
		return err
	}
	if err := checkPrefetch(n, w.opts.Prefetch); err != nil {
		return err
	}
	w.capacity.Store(int64(n))
	w.mu.Lock()
	if n > 0 {
		w.lastCapacity = n
	}
	c := w.conn
	declared := w.declaredCapacityLocked()
	w.pumpLocked()
	w.mu.Unlock()
	if c != nil {
		return c.SetCapacity(declared)
	}
	return nil
}

// declaredCapacityLocked is the capacity the session declares: handlers plus prefetch, none while
// paused or draining.
func (w *Worker) declaredCapacityLocked() int {
	if w.draining {
		return 0
	}
	return declaredCapacity(int(w.capacity.Load()), w.opts.Prefetch)
}

// declaredCapacity is the capacity a session declares for capacity handlers and prefetch: both,
// or 0 while paused, so a paused worker is granted nothing new.
func declaredCapacity(capacity, prefetch int) int {
	if capacity == 0 {
		return 0
	}
	return capacity + prefetch
}

// admit holds a newly assigned attempt: it runs when a run slot is free, after those waiting
// before it. A re-assign of one held or recently finished is ignored (its key and token were
// checked equal by the connection).
func (w *Worker) admit(f *TaskAssign) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.held[f.AttemptID]; ok {
		return
	}
	if _, ok := w.finished[f.AttemptID]; ok {
		return
	}
	h := &held{frame: f, phase: "waiting", leaseExpiresAt: f.LeaseExpiresAt}
	h.ctx, h.cancel = context.WithCancelCause(w.baseCtx)
	w.held[f.AttemptID] = h
	w.waiting = append(w.waiting, h)
	w.pumpLocked()
}

// runLimitLocked is how many attempts may hold a run slot now.
func (w *Worker) runLimitLocked() int {
	if n := int(w.capacity.Load()); n > 0 {
		return n
	}
	return w.lastCapacity
}

// pumpLocked takes waiting attempts, oldest first, while run slots are free.
func (w *Worker) pumpLocked() {
	for len(w.waiting) > 0 && w.running < w.runLimitLocked() && !w.stopped && !w.aborting {
		h := w.waiting[0]
		w.waiting[0] = nil
		w.waiting = w.waiting[1:]
		if w.held[h.frame.AttemptID] != h || h.phase != "waiting" {
			continue // dropped while it waited
		}
		h.phase = "starting"
		h.slot = true
		w.running++
		w.attempts.Add(1)
		go w.runAttempt(h)
	}
}

// freeSlotLocked: the attempt's handler is done (or will not run, or the attempt was lost); its
// run slot goes to the next waiting attempt. A second call for the same attempt is a no-op.
func (w *Worker) freeSlotLocked(h *held) {
	if !h.slot {
		return
	}
	h.slot = false
	w.running--
	w.pumpLocked()
}
