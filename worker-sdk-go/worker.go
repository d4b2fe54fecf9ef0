package orbit

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// stableSession is how long a session must last for the reconnect backoff to start over.
const stableSession = 10 * time.Second

// drainAck bounds the wait for drain.ok: a gateway that never answers must not keep the process up.
const drainAck = 10 * time.Second

// drainSettle bounds the wait, after a drain timed out and the handlers were cancelled, for them
// to return and for their results to be answered while the session is still open.
const drainSettle = 2 * time.Second

// Worker is one worker identity: a session kept open with backoff and resume, its attempts run by
// their handlers, and a draining stop.
type Worker struct {
	opts     Options
	log      *slog.Logger
	handlers map[string]map[string]HandlerFunc
	filter   []HandlerRegistration
	capacity atomic.Int64

	mu      sync.Mutex
	conn    *Conn         // the open session, nil between sessions
	sessCh  chan struct{} // closed when a session opens; replaced when it ends
	held    map[string]*held
	waiting []*held // granted, not yet taken for running: oldest first
	running int     // attempts holding a run slot
	// lastCapacity is the run limit while paused: attempts granted before the pause still run
	// (docs/worker-protocol.md, "Prefetch").
	lastCapacity int
	finished     map[string]struct{} // recently finished attempt ids: a re-assign is ignored
	emptyCh      chan struct{}       // closed when nothing is held (while a drain waits)
	draining     bool
	aborting     bool // the drain timed out: handlers cancelled, nothing more taken for running
	stopped      bool
	fatal        error

	started   atomic.Bool
	stopCh    chan struct{} // closed when the worker stops
	readyCh   chan struct{} // closed on the first hello.ok
	readyOnce sync.Once
	baseCtx   context.Context // parent of every handler's ctx; cancelled when the worker stops
	cancelAll context.CancelCauseFunc
	attempts  sync.WaitGroup
}

// NewWorker checks the options (reading CredentialsFile if given) and returns a worker; Run
// connects it. The hello it sends declares concurrency_keys=true: its handlers receive the
// fencing token (hand it to the resource, package fenced).
func NewWorker(opts Options) (*Worker, error) {
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	table, filter, err := handlerTable(opts.Handlers)
	if err != nil {
		return nil, err
	}
	w := &Worker{opts: opts, log: opts.Logger.With("worker_id", opts.WorkerID), handlers: table, filter: filter,
		sessCh: make(chan struct{}), held: map[string]*held{}, finished: map[string]struct{}{},
		stopCh: make(chan struct{}), readyCh: make(chan struct{})}
	w.capacity.Store(int64(opts.Capacity))
	// At least 1: an attempt granted to a worker that connected paused still runs (none should come).
	w.lastCapacity = max(1, opts.Capacity)
	w.baseCtx, w.cancelAll = context.WithCancelCause(context.Background())
	// A bad option fails here, before any I/O (capacity alone first, then beside prefetch).
	reg := w.registration(nil)
	reg.Capacity = opts.Capacity
	if _, err := helloFrame(reg); err != nil {
		return nil, err
	}
	if err := checkPrefetch(opts.Capacity, opts.Prefetch); err != nil {
		return nil, err
	}
	return w, nil
}

// ID is the worker's identity (worker_id).
func (w *Worker) ID() string { return w.opts.WorkerID }

// Ready is closed once the first session is open.
func (w *Worker) Ready() <-chan struct{} { return w.readyCh }

// InFlight is the number of attempts held (waiting, starting, running or reporting).
func (w *Worker) InFlight() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.held)
}

// Connected reports whether a session is open.
func (w *Worker) Connected() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.conn != nil
}

// Run connects and runs until ctx is cancelled, then drains: no more work is taken, running
// handlers finish (Options.DrainTimeout) and their results are acknowledged, the session is
// closed with 1000, and Run returns nil. When the drain times out, the handlers' ctx is
// cancelled and the results of those that return within a short settle are still sent before
// the close. It returns an error when the worker cannot go on: a refused credential, a retired
// queue, a frozen-capability conflict (STATE_CONFLICT), or the gateway unreachable for
// Reconnect.MaxAttempts attempts.
//
// Run does not wait without bound for a handler that ignores its ctx: after a timed-out drain or
// a fatal error it waits about 5 s more, then returns with such handlers still running. They
// outlive Run by design (a goroutine cannot be stopped from outside); their results are not
// sent (OnResult may report ErrResultNotSent after Run returned) and the leases of their RUNNING
// attempts run out, so the tasks go to NEEDS_REVIEW. A handler that returns its ctx's error after
// a timed-out drain reports unknown (NEEDS_REVIEW too: context.Cause is an *UnknownOutcomeError);
// one that returns its own error or output reports that. A handler must honour its ctx for a
// prompt, clean stop.
func (w *Worker) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("orbit: Run was already called on this worker")
	}
	go func() {
		select {
		case <-ctx.Done():
			w.drain()
		case <-w.stopCh:
		}
	}()
	w.connectionLoop()
	// Handlers were told to stop (drain timeout or fatal error); give them a moment to return.
	done := make(chan struct{})
	go func() { w.attempts.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		w.log.Warn("orbit worker: handlers still running after stop")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fatal
}

// RunUntilSignal is Run with a drain on SIGTERM or SIGINT (a second signal is not caught: it ends
// the process the default way).
func (w *Worker) RunUntilSignal(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	go func() { <-ctx.Done(); stop() }()
	return w.Run(ctx)
}

func (w *Worker) registration(resume []string) Registration {
	return Registration{WorkerID: w.opts.WorkerID, Queues: w.opts.Queues, Capacity: w.declaredCapacityLocked(), ConcurrencyKeys: true,
		Handlers: w.filter, Resume: resume, Agent: w.opts.Agent}
}

func (w *Worker) connectionLoop() {
	failures := 0
	limit := w.opts.Reconnect.limit()
	for !w.isStopped() {
		w.mu.Lock()
		reg := w.registration(w.resumeIDsLocked())
		known := w.knownLocked()
		w.mu.Unlock()
		registered := make(chan struct{})
		goaway := atomic.Bool{}
		dctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-w.stopCh:
				cancel()
			case <-dctx.Done():
			}
		}()
		c, err := Dial(dctx, w.dialOptions(reg, known, registered, &goaway))
		cancel()
		if err != nil {
			if w.isStopped() {
				return
			}
			if isFatalConnectError(err) {
				w.fail(err)
				return
			}
			failures++
			if failures >= limit {
				w.fail(&GatewayError{Code: "UNAVAILABLE", Fatal: true, Message: "cannot connect to " + w.opts.URL + " after " + strconv.Itoa(failures) + " attempts: " + err.Error()})
				return
			}
			delay := w.opts.Reconnect.backoff(failures)
			w.log.Warn("orbit worker: connect failed, retrying", "url", w.opts.URL, "err", err, "attempt", failures, "retry_in", delay)
			w.sleep(delay)
			continue
		}
		opened := time.Now()
		if !w.onOpen(c) { // stopped while the session was opening
			close(registered)
			_ = c.Close(1000, "worker stopped")
			return
		}
		close(registered)
		<-c.Done()
		w.onSessionEnd(c)
		code, reason := c.CloseCode()
		if w.isStopped() {
			return
		}
		if code == 1008 || code == 4409 {
			ge := &GatewayError{Code: "UNAUTHENTICATED", Fatal: true, Message: "session closed with " + strconv.Itoa(code) + ": " + reason}
			if code == 4409 {
				ge.Code = "STATE_CONFLICT"
			}
			var cerr *GatewayError
			if errors.As(c.Err(), &cerr) && cerr.Fatal {
				ge.Code, ge.Message = cerr.Code, cerr.Message
			}
			w.fail(ge)
			return
		}
		if time.Since(opened) >= stableSession || goaway.Load() {
			failures = 0
		} else {
			failures++
		}
		w.log.Info("orbit worker: disconnected, reconnecting", "code", code, "goaway", goaway.Load())
		if !goaway.Load() {
			w.sleep(w.opts.Reconnect.backoff(failures))
		}
	}
}

func (w *Worker) dialOptions(reg Registration, known map[string]KnownAttempt, registered chan struct{}, goaway *atomic.Bool) DialOptions {
	// Frames of a session reach the worker only once it is the current one (onOpen ran); those
	// of a superseded session are ignored.
	current := func(c *Conn) bool {
		<-registered
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.conn == c
	}
	return DialOptions{
		URL: w.opts.URL, Token: w.opts.Token, Registration: reg, KnownAttempts: known,
		HelloTimeout: w.opts.HelloTimeout, IdleTimeout: w.opts.IdleTimeout,
		OnAssign: func(c *Conn, f *TaskAssign) {
			if current(c) {
				w.admit(f)
			}
		},
		OnCancel: func(c *Conn, f *TaskCancel) {
			if current(c) {
				w.markLost(f.AttemptID, f.Reason)
			}
		},
		OnGoaway: func(c *Conn, f *Goaway) {
			goaway.Store(true)
			w.log.Info("orbit worker: goaway, reconnecting", "reason", f.Reason)
			go func() { _ = c.Close(1000, "goaway") }()
		},
		OnError: func(c *Conn, f *ErrorFrame) {
			w.log.Warn("orbit worker: gateway error", "code", f.Code, "err", f.Message, "fatal", f.Fatal)
		},
		OnViolation: func(c *Conn, v *ProtocolViolation) {
			w.log.Error("orbit worker: gateway protocol violation, closing with 1002", "attempt_id", v.AttemptID, "err", v.Message)
		},
	}
}

// onOpen makes c the worker's session; false when the worker stopped meanwhile.
func (w *Worker) onOpen(c *Conn) bool {
	h := c.Hello()
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return false
	}
	for _, r := range h.Resumed {
		if a := w.held[r.AttemptID]; a != nil {
			a.leaseExpiresAt = r.LeaseExpiresAt
		}
	}
	w.conn = c
	close(w.sessCh)
	draining := w.draining
	w.mu.Unlock()
	// Lost ones lose their right to execute (a result already computed is still re-sent: if the
	// gateway got it before the drop it is deduplicated).
	for _, id := range h.Lost {
		w.markLost(id, "LOST_ON_RESUME")
	}
	w.log.Info("orbit worker: connected", "session_id", h.SessionID, "url", w.opts.URL, "resumed", len(h.Resumed), "lost", len(h.Lost))
	w.readyOnce.Do(func() { close(w.readyCh) })
	go w.renewLoop(c)
	if draining {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), drainAck)
			defer cancel()
			_ = c.Drain(ctx)
		}()
	}
	return true
}

func (w *Worker) onSessionEnd(c *Conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn == c {
		w.conn = nil
		w.sessCh = make(chan struct{})
	}
}

// session is the open session, waiting for a reconnect if needed; nil once the worker stopped.
func (w *Worker) session() *Conn {
	for {
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			return nil
		}
		if w.conn != nil {
			c := w.conn
			w.mu.Unlock()
			return c
		}
		ch := w.sessCh
		w.mu.Unlock()
		select {
		case <-ch:
		case <-w.stopCh:
			return nil
		}
	}
}

func (w *Worker) isStopped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopped
}

func (w *Worker) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.stopCh:
	}
}

// drain: no more work, the held attempts finish (bounded by DrainTimeout), then stop.
func (w *Worker) drain() {
	w.mu.Lock()
	if w.stopped || w.draining {
		w.mu.Unlock()
		return
	}
	w.draining = true
	c := w.conn
	w.mu.Unlock()
	if c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), drainAck)
		_ = c.Drain(ctx)
		cancel()
	}
	if !w.settle(w.opts.DrainTimeout) {
		w.log.Warn("orbit worker: drain timed out; cancelling handlers", "in_flight", w.InFlight())
		// The cause says the effect's fate is unknown: a handler that returns its ctx's error
		// reports unknown (NEEDS_REVIEW), not failed (handlerErrorResult).
		w.abortHeld(&UnknownOutcomeError{Err: errors.New("orbit: the worker closed before the handler finished")})
		// The cancelled handlers return (a handler that honours its ctx returns at once) and their
		// results, and those already in flight, are sent and answered on the session still open;
		// bounded, so a handler that ignores its ctx does not keep the worker up.
		if !w.settle(drainSettle) {
			w.log.Warn("orbit worker: attempts still unfinished after the drain timeout; their leases will run out", "in_flight", w.InFlight())
		}
	}
	w.stop(nil)
}

// abortHeld ends a timed-out drain: the waiting attempts are dropped unstarted (their leases run
// out and their tasks run again without an attempt consumed) and the running handlers' ctx is
// cancelled with cause.
func (w *Worker) abortHeld(cause error) {
	w.mu.Lock()
	w.aborting = true
	dropped := w.waiting
	w.waiting = nil
	w.mu.Unlock()
	for _, h := range dropped {
		w.release(h)
	}
	w.cancelAll(cause)
}

// stop ends the worker: err nil after a drain, else the fatal error Run returns.
func (w *Worker) stop(err error) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.stopped = true
	w.fatal = err
	c := w.conn
	close(w.stopCh)
	// Waiting attempts are dropped unstarted: their leases run out and the tasks run again
	// without an attempt consumed.
	dropped := w.waiting
	w.waiting = nil
	w.mu.Unlock()
	for _, h := range dropped {
		w.release(h)
	}
	if err != nil {
		w.cancelAll(err)
	}
	if c != nil {
		_ = c.Close(1000, "worker stopped")
	}
}

func (w *Worker) fail(err error) {
	w.log.Error("orbit worker: fatal error, stopping", "err", err)
	w.stop(err)
}
