package orbit_test

// Options.Prefetch (docs/worker-protocol.md, "Prefetch") against a real gateway, the cases of the
// Node SDK's test/sdk-prefetch.test.ts: at most Capacity handlers run while Capacity + Prefetch
// attempts are held, waiting attempts run oldest first, keep their leases by renewal, are dropped
// unstarted when cancelled, and still run when the worker pauses or drains.

import (
	"context"
	"database/sql"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	orbit "github.com/orbit-tasks/orbit/worker-sdk-go"
	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
)

// gate holds the first handler until open (also at the test's end, so a failed test's handler ends).
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{ch: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

func (g *gate) wait(ctx context.Context) {
	select {
	case <-g.ch:
	case <-ctx.Done():
	}
}

// order records the task ids handlers saw, in call order.
type order struct {
	mu  sync.Mutex
	ids []string
}

func (o *order) add(id string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ids = append(o.ids, id)
	return len(o.ids)
}

func (o *order) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.ids...)
}

// startPrefetch runs a worker of handler "h" on q with capacity and prefetch; stop drains it.
func startPrefetch(t *testing.T, g *gw, q string, capacity, prefetch int, fn orbit.HandlerFunc) (*orbit.Worker, func() error) {
	t.Helper()
	w, err := orbit.NewWorker(orbit.Options{URL: g.url, Token: g.token, Queues: []string{q}, Capacity: capacity, Prefetch: prefetch,
		Logger: quiet, DrainTimeout: 5 * time.Second, Handlers: []orbit.Handler{{Name: "h", Func: fn}}})
	if err != nil {
		t.Fatalf("NewWorker: %v", err)
	}
	return w, runWorker(t, w)
}

func eventually(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// session is q's worker session as the gateway sees it (GET /v1/workers); nil when none.
func (g *gw) session(q string) *client.WorkerSession {
	g.t.Helper()
	ws, err := g.api.ListWorkers(ctxFor(g.t, 10*time.Second), q)
	if err != nil {
		g.t.Fatalf("ListWorkers: %v", err)
	}
	if len(ws) == 0 {
		return nil
	}
	return &ws[0]
}

// holdFirst starts a worker whose first handler waits for the gate, submits n tasks one at a
// time (each held before the next, so the assignment order is known) and returns their ids.
func holdFirst(t *testing.T, g *gw, q string, capacity, prefetch, n int, seen *order, fn func()) (*orbit.Worker, func() error, *gate, []string) {
	gt := newGate(t)
	w, stop := startPrefetch(t, g, q, capacity, prefetch, func(ctx context.Context, e *orbit.Event) (any, error) {
		if seen.add(e.Task.ID) == 1 {
			gt.wait(ctx)
		}
		if fn != nil {
			fn()
		}
		return nil, nil
	})
	ids := []string{g.submit(q, "h", "", nil, "t0")}
	eventually(t, "the first handler", 10*time.Second, func() bool { return len(seen.get()) == 1 })
	for i := 1; i < n; i++ {
		ids = append(ids, g.submit(q, "h", "", nil, "t"+strconv.Itoa(i)))
		eventually(t, strconv.Itoa(i+1)+" attempts held", 10*time.Second, func() bool { return w.InFlight() == i+1 })
	}
	return w, stop, gt, ids
}

func TestPrefetchBacklogRunsCapacityHoldsMore(t *testing.T) {
	g := newGW(t)
	q := g.queue(0)
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = g.submit(q, "h", "", map[string]int{"n": i}, "b"+strconv.Itoa(i))
	}
	var running, maxRunning, done atomic.Int64
	startPrefetch(t, g, q, 2, 3, func(ctx context.Context, e *orbit.Event) (any, error) {
		n := running.Add(1)
		for m := maxRunning.Load(); n > m && !maxRunning.CompareAndSwap(m, n); m = maxRunning.Load() {
		}
		time.Sleep(40 * time.Millisecond)
		running.Add(-1)
		done.Add(1)
		return nil, nil
	})
	// The gateway's own count of held attempts (LEASED or RUNNING) while the backlog drains.
	gatewayMax := 0
	for done.Load() < int64(len(ids)) {
		s := g.session(q)
		if s == nil {
			t.Fatal("no session")
		}
		if s.Capacity != 5 {
			t.Fatalf("declared capacity %d, want 5", s.Capacity)
		}
		gatewayMax = max(gatewayMax, s.InFlight)
		time.Sleep(20 * time.Millisecond)
	}
	for _, id := range ids {
		g.waitState(id, "SUCCEEDED")
	}
	if maxRunning.Load() != 2 || gatewayMax != 5 {
		t.Fatalf("at most %d handlers at once (want 2), %d attempts held (want 5)", maxRunning.Load(), gatewayMax)
	}
}

func TestPrefetchWaitingRunOldestFirst(t *testing.T) {
	g := newGW(t)
	var seen order
	_, _, gt, ids := holdFirst(t, g, g.queue(0), 1, 4, 5, &seen, nil)
	if got := seen.get(); len(got) != 1 {
		t.Fatalf("handlers ran %v before the first finished", got)
	}
	gt.open()
	for _, id := range ids {
		g.waitState(id, "SUCCEEDED")
	}
	if got := seen.get(); !slices.Equal(got, ids) {
		t.Fatalf("ran in order %v, want %v", got, ids)
	}
}

func TestPrefetchCancelledWaitingAttemptIsDropped(t *testing.T) {
	g := newGW(t)
	var seen order
	w, _, gt, ids := holdFirst(t, g, g.queue(0), 1, 1, 2, &seen, nil)
	if _, err := g.api.CancelTask(ctxFor(t, 10*time.Second), ids[1], g.key("cancel"), "test"); err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	eventually(t, "the waiting attempt dropped", 10*time.Second, func() bool { return w.InFlight() == 1 })
	gt.open()
	g.waitState(ids[0], "SUCCEEDED")
	if got := seen.get(); !slices.Equal(got, ids[:1]) {
		t.Fatalf("handlers saw %v, want only %s", got, ids[0])
	}
	g.waitState(ids[1], "CANCELLED")
	if a := g.attempts(ids[1]); len(a) != 1 || a[0].StartedAt != nil {
		t.Fatalf("the cancelled task's attempts: %+v (want one, never started)", a)
	}
}

func TestPrefetchWaitingLeaseRenewed(t *testing.T) {
	g := newGW(t)
	var seen order
	_, _, gt, ids := holdFirst(t, g, g.queue(5), 1, 1, 2, &seen, nil) // renew_ms ≈ 1.7 s
	attempt := g.attempts(ids[1])[0].ID
	db, err := sql.Open("mysql", os.Getenv("ORBIT_TEST_MYSQL_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// 2.5 s left: more than one renew interval, so only a renewal keeps it past that.
	if _, err := db.Exec("UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL 2500000 MICROSECOND WHERE id = ?", attempt); err != nil {
		t.Fatalf("shorten the lease (ORBIT_TEST_MYSQL_DSN): %v", err)
	}
	shortenedAt := time.Now()
	eventually(t, "the waiting lease renewed", 4*time.Second, func() bool {
		var renewed bool
		err := db.QueryRow("SELECT lease_expires_at > UTC_TIMESTAMP(3) + INTERVAL 3 SECOND FROM attempts WHERE id = ?", attempt).Scan(&renewed)
		return err == nil && renewed
	})
	time.Sleep(time.Until(shortenedAt.Add(3200 * time.Millisecond))) // past the shortened end and a sweep
	if a, err := g.api.GetAttempt(ctxFor(t, 10*time.Second), attempt); err != nil || a.State != "LEASED" {
		t.Fatalf("the waiting attempt after its shortened lease: %+v %v", a, err)
	}
	gt.open()
	g.waitState(ids[1], "SUCCEEDED")
	if a := g.attempts(ids[1]); len(a) != 1 || a[0].ID != attempt {
		t.Fatalf("attempts %+v, want the one %s", a, attempt)
	}
}

func TestPrefetchPausedRunsWaitingNothingNew(t *testing.T) {
	g := newGW(t)
	q := g.queue(0)
	var seen order
	var running, maxRunning atomic.Int64
	w, _, gt, ids := holdFirst(t, g, q, 1, 2, 3, &seen, func() {
		n := running.Add(1)
		for m := maxRunning.Load(); n > m && !maxRunning.CompareAndSwap(m, n); m = maxRunning.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		running.Add(-1)
	})
	if err := w.SetCapacity(0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "capacity 0 declared", 10*time.Second, func() bool { s := g.session(q); return s != nil && s.Capacity == 0 })
	later := g.submit(q, "h", "", nil, "later")
	gt.open()
	for _, id := range ids {
		g.waitState(id, "SUCCEEDED")
	}
	if got := seen.get(); !slices.Equal(got, ids) || maxRunning.Load() != 1 {
		t.Fatalf("ran %v with at most %d at once, want %v one at a time", got, maxRunning.Load(), ids)
	}
	time.Sleep(500 * time.Millisecond) // nothing new while paused
	if task, err := g.api.GetTask(ctxFor(t, 10*time.Second), later); err != nil || task.State != "WAITING" {
		t.Fatalf("a task submitted while paused: %+v %v", task, err)
	}
	if err := w.SetCapacity(1); err != nil {
		t.Fatal(err)
	}
	g.waitState(later, "SUCCEEDED")
}

func TestPrefetchDrainRunsWaiting(t *testing.T) {
	g := newGW(t)
	q := g.queue(0)
	var seen order
	_, stop, gt, ids := holdFirst(t, g, q, 1, 2, 3, &seen, nil)
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	eventually(t, "the session draining", 10*time.Second, func() bool { s := g.session(q); return s != nil && s.Draining })
	gt.open()
	if err := <-stopped; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := seen.get(); !slices.Equal(got, ids) {
		t.Fatalf("ran %v, want %v", got, ids)
	}
	for _, id := range ids {
		g.waitState(id, "SUCCEEDED")
	}
}
