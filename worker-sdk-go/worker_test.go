package orbit_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	orbit "github.com/orbit-tasks/orbit/worker-sdk-go"
	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
)

// runWorker starts w.Run and returns a stop that cancels it (a drain) and returns Run's error.
func runWorker(t *testing.T, w *orbit.Worker) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	select {
	case <-w.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("worker stopped before its first session: %v", err)
	case <-time.After(15 * time.Second):
		cancel()
		t.Fatal("worker not connected within 15 s")
	}
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(40 * time.Second):
				t.Fatal("Run did not return within 40 s of its ctx being cancelled")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// Outcomes from the handler's return: output, *RetryError (then success), *UnknownOutcomeError,
// any other error; the handler sees the exact token the attempts API shows, and the key.
func TestWorkerOutcomesAndTokens(t *testing.T) {
	g := newGW(t)
	q := g.queue(0)
	type seen struct {
		attempt string
		token   uint64
		key     string
	}
	var mu sync.Mutex
	var got []seen
	tries := map[string]int{}
	w, err := orbit.NewWorker(orbit.Options{URL: g.url, Token: g.token, Queues: []string{q}, Capacity: 4, Logger: quiet,
		Handlers: []orbit.Handler{{Name: "object.update", Func: func(ctx context.Context, e *orbit.Event) (any, error) {
			var p struct{ Mode string }
			if err := json.Unmarshal(e.Task.Payload, &p); err != nil {
				return nil, err
			}
			mu.Lock()
			got = append(got, seen{e.AttemptID, e.ConcurrencyToken, e.Task.ConcurrencyKey})
			tries[p.Mode]++
			n := tries[p.Mode]
			mu.Unlock()
			switch p.Mode {
			case "retry-once":
				if n == 1 {
					return nil, orbit.Retry(errors.New("upstream 503"), 10*time.Millisecond)
				}
				return map[string]any{"try": n, "token": strconv.FormatUint(e.ConcurrencyToken, 10)}, nil
			case "unknown":
				return nil, wrapped(orbit.Unknown(errors.New("timed out after sending")))
			case "fail":
				return nil, &orbit.PermanentError{Code: "BAD_INPUT", Err: errors.New("no such object")}
			case "plain-error":
				return nil, errors.New("boom")
			}
			return nil, nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	retry := g.submit(q, "object.update", "object/"+g.id, map[string]string{"mode": "retry-once"}, "retry")
	unknown := g.submit(q, "object.update", "", map[string]string{"mode": "unknown"}, "unknown")
	failed := g.submit(q, "object.update", "", map[string]string{"mode": "fail"}, "fail")
	plain := g.submit(q, "object.update", "", map[string]string{"mode": "plain-error"}, "plain")

	done := g.waitState(retry, client.TaskSucceeded)
	var out struct{ Try int }
	if err := json.Unmarshal(done.Result.Output, &out); err != nil || out.Try != 2 {
		t.Fatalf("output %s (%v)", done.Result.Output, err)
	}
	if task := g.waitState(unknown, client.TaskNeedsReview, client.TaskFailed); task.State != client.TaskNeedsReview {
		t.Fatalf("unknown outcome: task %s", task.State)
	}
	if task := g.waitState(failed, client.TaskFailed); task.Result.Error == nil || task.Result.Error.Code != "BAD_INPUT" {
		t.Fatalf("permanent error: %+v", task.Result)
	}
	if task := g.waitState(plain, client.TaskFailed); task.Result.Error == nil || task.Result.Error.Code != "HANDLER_ERROR" || task.Result.Error.Message != "boom" {
		t.Fatalf("plain error: %+v", task.Result)
	}
	// The keyed task's two attempts: outcomes retry then succeeded, tokens strictly increasing, and
	// the handler saw exactly the tokens the attempts API records.
	attempts := g.attempts(retry)
	if len(attempts) != 2 || attempts[0].Outcome != "retry" || attempts[1].Outcome != "succeeded" {
		t.Fatalf("attempts %+v", attempts)
	}
	mu.Lock()
	byAttempt := map[string]seen{}
	for _, s := range got {
		byAttempt[s.attempt] = s
	}
	mu.Unlock()
	for _, a := range attempts {
		s, ok := byAttempt[a.ID]
		if !ok || a.ConcurrencyToken == nil || s.token != *a.ConcurrencyToken || s.key != "object/"+g.id {
			t.Fatalf("attempt %s: handler saw %+v, API token %v", a.ID, s, a.ConcurrencyToken)
		}
	}
	if *attempts[1].ConcurrencyToken <= *attempts[0].ConcurrencyToken {
		t.Fatalf("tokens not increasing: %d then %d", *attempts[0].ConcurrencyToken, *attempts[1].ConcurrencyToken)
	}
	if s := byAttempt[g.attempts(unknown)[0].ID]; s.token != 0 || s.key != "" {
		t.Fatalf("unkeyed task seen with token %d key %q", s.token, s.key)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run after a drain: %v", err)
	}
	if w.Connected() || w.InFlight() != 0 {
		t.Fatalf("after Run: connected %v, in flight %d", w.Connected(), w.InFlight())
	}
}

func wrapped(err error) error { return errors.Join(errors.New("while updating"), err) }

// Run's ctx cancelled while a handler runs: no new work, the handler finishes, its result is
// acknowledged, then Run returns nil.
func TestWorkerDrainsOnCancel(t *testing.T) {
	g := newGW(t)
	q := g.queue(0)
	entered := make(chan struct{})
	release := make(chan struct{})
	var handlerCtxErr error
	w, err := orbit.NewWorker(orbit.Options{URL: g.url, Token: g.token, Queues: []string{q}, Capacity: 2, Logger: quiet,
		Handlers: []orbit.Handler{{Name: "slow", Versions: []string{"v1"}, Func: func(ctx context.Context, e *orbit.Event) (any, error) {
			close(entered)
			<-release
			handlerCtxErr = ctx.Err()
			return "done", nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	task := g.submit(q, "slow", "", nil, "slow")
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		t.Fatalf("Run returned (%v) while a handler was still running", err)
	case <-time.After(300 * time.Millisecond):
	}
	late := g.submit(q, "slow", "", nil, "late") // drained: never assigned to this worker
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if handlerCtxErr != nil {
		t.Fatalf("the handler's ctx was cancelled by a drain: %v", handlerCtxErr)
	}
	if got := g.waitState(task, client.TaskSucceeded); string(got.Result.Output) != `"done"` {
		t.Fatalf("output %s", got.Result.Output)
	}
	if got := g.waitState(late, client.TaskWaiting); got.AttemptsMade != 0 {
		t.Fatalf("the late task was attempted: %+v", got)
	}
}

// A lease lost while the handler runs (the connection stalls past the 5 s lease: the gateway
// expires the RUNNING attempt and tells the worker, by task.cancel or renew.ok's lost, once frames
// flow again) cancels the handler's ctx with a *LeaseLostError cause, and no result is sent.
func TestWorkerLeaseLossCancelsHandler(t *testing.T) {
	g := newGW(t)
	q := g.queue(5)
	p := newProxy(t, g.url)
	entered := make(chan string, 1)
	cause := make(chan error, 1)
	w, err := orbit.NewWorker(orbit.Options{URL: p.url, Token: g.token, Queues: []string{q}, Capacity: 1, Logger: quiet,
		Handlers: []orbit.Handler{{Name: "wait", Func: func(ctx context.Context, e *orbit.Event) (any, error) {
			entered <- e.AttemptID
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return "too late", nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	task := g.submit(q, "wait", "object/lease-"+g.id, nil, "wait")
	attempt := <-entered
	p.pause(true) // renewals stop reaching the gateway; the connection stays open
	g.waitState(task, client.TaskNeedsReview)
	p.pause(false)
	var ll *orbit.LeaseLostError
	select {
	case err := <-cause:
		if !errors.As(err, &ll) || ll.AttemptID != attempt || (ll.Reason != "LEASE_EXPIRED" && ll.Reason != "LEASE_LOST") {
			t.Fatalf("cause %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the handler's ctx was not cancelled")
	}
	time.Sleep(200 * time.Millisecond) // a result sent now would reach the gateway
	attempts := g.attempts(task)
	if len(attempts) != 1 || attempts[0].State != "UNKNOWN" || attempts[0].Error == nil || attempts[0].Error.Code != "LEASE_EXPIRED" {
		t.Fatalf("attempts %+v", attempts)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// A refused credential ends Run with UNAUTHENTICATED, at once (no retry can fix it).
func TestWorkerFatalOnBadCredential(t *testing.T) {
	g := newGW(t)
	w, err := orbit.NewWorker(orbit.Options{URL: g.url, Token: "orb_not-a-real-token", Queues: []string{g.queue(0)}, Capacity: 1, Logger: quiet,
		Handlers: []orbit.Handler{{Name: "x", Func: func(context.Context, *orbit.Event) (any, error) { return nil, nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	err = w.Run(ctxFor(t, 20*time.Second))
	var ge *orbit.GatewayError
	if !errors.As(err, &ge) || ge.Code != "UNAUTHENTICATED" || ge.Status != 401 {
		t.Fatalf("Run: %v", err)
	}
	if time.Since(started) > 5*time.Second {
		t.Fatalf("took %v", time.Since(started))
	}
}

// NewWorker refuses options that cannot make a valid hello, before any I/O.
func TestNewWorkerRefusesBadOptions(t *testing.T) {
	h := []orbit.Handler{{Name: "x", Func: func(context.Context, *orbit.Event) (any, error) { return nil, nil }}}
	for name, o := range map[string]orbit.Options{
		"no handler":      {URL: "http://127.0.0.1:1", Token: "t", Queues: []string{"q"}},
		"no queue":        {URL: "http://127.0.0.1:1", Token: "t", Handlers: h},
		"capacity 1025":   {URL: "http://127.0.0.1:1", Token: "t", Queues: []string{"q"}, Capacity: 1025, Handlers: h},
		"bad worker id":   {URL: "http://127.0.0.1:1", Token: "t", Queues: []string{"q"}, Handlers: h, WorkerID: "has space"},
		"no token":        {URL: "http://127.0.0.1:1", Queues: []string{"q"}, Handlers: h},
		"bad handler":     {URL: "http://127.0.0.1:1", Token: "t", Queues: []string{"q"}, Handlers: []orbit.Handler{{Name: "a b", Func: h[0].Func}}},
		"missing file":    {CredentialsFile: "/nonexistent/credentials.json", Handlers: h},
		"twice a version": {URL: "http://127.0.0.1:1", Token: "t", Queues: []string{"q"}, Handlers: append(h, h...)},
	} {
		if _, err := orbit.NewWorker(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A drain that times out cancels the running handlers, then still sends the results they return
// on the open session: OnResult fires with the gateway's answer and the task is not left RUNNING
// until its lease runs out.
func TestDrainTimeoutReports(t *testing.T) {
	g := newGW(t)
	q := g.queue(0)
	entered := make(chan struct{})
	var mu sync.Mutex
	var reports []orbit.ResultReport
	w, err := orbit.NewWorker(orbit.Options{URL: g.url, Token: g.token, Queues: []string{q}, Capacity: 1, Logger: quiet,
		DrainTimeout: 300 * time.Millisecond,
		OnResult: func(r orbit.ResultReport) {
			mu.Lock()
			reports = append(reports, r)
			mu.Unlock()
		},
		Handlers: []orbit.Handler{{Name: "stuck", Func: func(ctx context.Context, e *orbit.Event) (any, error) {
			close(entered)
			<-ctx.Done()
			return nil, &orbit.PermanentError{Code: "STOPPED", Err: context.Cause(ctx)}
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	task := g.submit(q, "stuck", "", nil, "stuck")
	<-entered
	began := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Fatalf("Run took %v to return after a 300 ms drain timeout", d)
	}
	mu.Lock()
	got := append([]orbit.ResultReport(nil), reports...)
	mu.Unlock()
	if len(got) != 1 || got[0].Outcome != "failed" || got[0].Err != nil || got[0].TaskState != client.TaskFailed {
		t.Fatalf("OnResult reports %+v, want one failed result answered by the gateway", got)
	}
	st := g.waitState(task, client.TaskFailed)
	if st.Result == nil || st.Result.Error == nil || st.Result.Error.Code != "STOPPED" {
		t.Fatalf("task %+v", st)
	}
}

// A running attempt that loses its lease (task.cancel or renew.ok's lost, here after its lease is
// cut short in the database) frees its run slot at once, not when its handler returns: with
// Capacity 1 and no prefetch, a handler that ignores its ctx does not keep the next task from
// running (the gateway stopped counting the lost attempt and assigns the next one).
func TestLostFreesSlot(t *testing.T) {
	g := newGW(t)
	q := g.queue(5) // renew_ms ≈ 1.7 s
	db, err := sql.Open("mysql", os.Getenv("ORBIT_TEST_MYSQL_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	entered := make(chan string, 2)
	hold := make(chan struct{})
	var calls atomic.Int32
	w, err := orbit.NewWorker(orbit.Options{URL: g.url, Token: g.token, Queues: []string{q}, Capacity: 1, Logger: quiet,
		DrainTimeout: 300 * time.Millisecond,
		Handlers: []orbit.Handler{{Name: "h", Func: func(ctx context.Context, e *orbit.Event) (any, error) {
			entered <- e.Task.ID
			if calls.Add(1) == 1 {
				<-hold // ignores its ctx, until the test ends
			}
			return nil, nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	runWorker(t, w)
	t.Cleanup(func() { close(hold) }) // before the worker's drain (cleanups run last first)
	first := g.submit(q, "h", "", nil, "first")
	select {
	case id := <-entered:
		if id != first {
			t.Fatalf("handler called for %s, want %s", id, first)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the first handler was not called")
	}
	if _, err := db.Exec("UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE task_id = ?", first); err != nil {
		t.Fatalf("expire the lease (ORBIT_TEST_MYSQL_DSN): %v", err)
	}
	g.waitState(first, client.TaskNeedsReview)
	second := g.submit(q, "h", "", nil, "second")
	select {
	case id := <-entered:
		if id != second {
			t.Fatalf("handler called for %s, want %s", id, second)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second task's handler was not called while the lost one's handler still runs")
	}
	g.waitState(second, client.TaskSucceeded)
}

// A drain that times out cancels the handlers' ctx with an *UnknownOutcomeError cause: a handler
// that returns ctx.Err() reports unknown, and its task goes to NEEDS_REVIEW, not FAILED (the SDK
// cannot know whether the effect happened).
func TestDrainTimeoutUnknown(t *testing.T) {
	g := newGW(t)
	q := g.queue(0)
	entered := make(chan struct{})
	cause := make(chan error, 1)
	reports := make(chan orbit.ResultReport, 1)
	w, err := orbit.NewWorker(orbit.Options{URL: g.url, Token: g.token, Queues: []string{q}, Capacity: 1, Logger: quiet,
		DrainTimeout: 300 * time.Millisecond,
		OnResult:     func(r orbit.ResultReport) { reports <- r },
		Handlers: []orbit.Handler{{Name: "h", Func: func(ctx context.Context, e *orbit.Event) (any, error) {
			close(entered)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil, ctx.Err()
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	task := g.submit(q, "h", "", nil, "h")
	<-entered
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	select {
	case r := <-reports:
		if r.Outcome != "unknown" || r.Err != nil || r.TaskState != client.TaskNeedsReview {
			t.Fatalf("OnResult %+v, want unknown answered with NEEDS_REVIEW", r)
		}
	default:
		t.Fatal("no OnResult before Run returned")
	}
	st := g.waitState(task, client.TaskNeedsReview, client.TaskFailed)
	if st.State != client.TaskNeedsReview || st.Result == nil || st.Result.Error == nil || st.Result.Error.Code != "UNKNOWN_OUTCOME" {
		t.Fatalf("task %+v, want NEEDS_REVIEW with UNKNOWN_OUTCOME", st)
	}
	var ue *orbit.UnknownOutcomeError
	if err := <-cause; !errors.As(err, &ue) {
		t.Fatalf("cause %v, want an *UnknownOutcomeError", err)
	}
}
