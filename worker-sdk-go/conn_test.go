package orbit_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	orbit "github.com/orbit-tasks/orbit/worker-sdk-go"
	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
)

// A low-level session that does not declare concurrency_keys is never assigned a keyed task; it
// runs the unkeyed one through Start and Result itself.
func TestConnWithoutCapabilityGetsNoKeyedTask(t *testing.T) {
	g := newGW(t)
	q := g.queue(0)
	keyed := g.submit(q, "object.update", "object/"+g.id, nil, "keyed")
	plain := g.submit(q, "object.update", "", map[string]int{"n": 1}, "plain")
	assigned := make(chan *orbit.TaskAssign, 4)
	c, err := orbit.Dial(ctxFor(t, 10*time.Second), orbit.DialOptions{URL: g.url, Token: g.token,
		Registration: orbit.Registration{WorkerID: "go-conn-" + g.id, Queues: []string{q}, Capacity: 4, ConcurrencyKeys: false},
		OnAssign:     func(_ *orbit.Conn, f *orbit.TaskAssign) { assigned <- f }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(1000, "test done")
	var f *orbit.TaskAssign
	select {
	case f = <-assigned:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing assigned")
	}
	if f.Task.ID != plain || f.ConcurrencyToken != nil || f.Task.ConcurrencyKey != nil {
		t.Fatalf("assigned %+v", f)
	}
	if _, err := c.Start(ctxFor(t, 10*time.Second), f.AttemptID); err != nil {
		t.Fatal(err)
	}
	ok, err := c.Result(ctxFor(t, 10*time.Second), orbit.ResultInput{AttemptID: f.AttemptID, Outcome: "succeeded", Output: []byte(`{"ok":true}`)})
	if err != nil || ok.Deduplicated || ok.TaskState != "SUCCEEDED" {
		t.Fatalf("result %+v %v", ok, err)
	}
	// The same result again is deduplicated; a different one is STATE_CONFLICT, the session stays.
	if ok, err = c.Result(ctxFor(t, 10*time.Second), orbit.ResultInput{AttemptID: f.AttemptID, Outcome: "succeeded", Output: []byte(`{"ok":true}`)}); err != nil || !ok.Deduplicated {
		t.Fatalf("replayed result %+v %v", ok, err)
	}
	_, err = c.Result(ctxFor(t, 10*time.Second), orbit.ResultInput{AttemptID: f.AttemptID, Outcome: "failed", Error: &orbit.ResultError{Code: "X", Message: "x"}})
	var ge *orbit.GatewayError
	if !errors.As(err, &ge) || ge.Code != "STATE_CONFLICT" || ge.Fatal {
		t.Fatalf("conflicting result: %v", err)
	}
	// A frame the gateway would refuse is refused locally, and the session survives it.
	_, err = c.Result(ctxFor(t, 10*time.Second), orbit.ResultInput{AttemptID: f.AttemptID, Outcome: "done"})
	var fe *orbit.FrameError
	if !errors.As(err, &fe) || fe.Code != "INVALID_ARGUMENT" {
		t.Fatalf("invalid outcome: %v", err)
	}
	if _, err := c.Renew(ctxFor(t, 10*time.Second), []string{f.AttemptID}); err != nil {
		t.Fatalf("session after the refusals: %v", err)
	}
	select {
	case f := <-assigned:
		t.Fatalf("a session without the capability was assigned %+v", f)
	case <-time.After(500 * time.Millisecond):
	}
	if task := g.waitState(keyed, client.TaskWaiting); task.AttemptsMade != 0 {
		t.Fatalf("keyed task %+v", task)
	}
	if err := c.Drain(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatalf("drain: %v", err)
	}
}

// The capability is frozen per worker id: a worker reusing an id first registered without it is
// refused with STATE_CONFLICT, and Run returns that error.
func TestFrozenCapabilityConflictIsFatal(t *testing.T) {
	g := newGW(t)
	q := g.queue(0)
	id := "go-frozen-" + g.id
	c, err := orbit.Dial(ctxFor(t, 10*time.Second), orbit.DialOptions{URL: g.url, Token: g.token,
		Registration: orbit.Registration{WorkerID: id, Queues: []string{q}, Capacity: 1}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close(1000, "done")
	w, err := orbit.NewWorker(orbit.Options{URL: g.url, Token: g.token, Queues: []string{q}, Capacity: 1, WorkerID: id, Logger: quiet,
		Handlers: []orbit.Handler{{Name: "x", Func: func(context.Context, *orbit.Event) (any, error) { return nil, nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Run(ctxFor(t, 20*time.Second))
	var ge *orbit.GatewayError
	if !errors.As(err, &ge) || ge.Code != "STATE_CONFLICT" {
		t.Fatalf("Run: %v", err)
	}
}

// A dropped connection: the worker reconnects with the same identity and resumes the running
// attempt (same attempt, same token); the handler is not disturbed and its result is accepted.
func TestWorkerResumesAfterDrop(t *testing.T) {
	g := newGW(t)
	q := g.queue(0)
	p := newProxy(t, g.url)
	entered := make(chan uint64, 1)
	release := make(chan struct{})
	var handlerErr error
	w, err := orbit.NewWorker(orbit.Options{URL: p.url, Token: g.token, Queues: []string{q}, Capacity: 1, Logger: quiet,
		Reconnect: orbit.ReconnectPolicy{InitialDelay: 20 * time.Millisecond, MaxDelay: 100 * time.Millisecond},
		Handlers: []orbit.Handler{{Name: "hold", Func: func(ctx context.Context, e *orbit.Event) (any, error) {
			entered <- e.ConcurrencyToken
			<-release
			handlerErr = ctx.Err()
			return e.ConcurrencyToken, nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	task := g.submit(q, "hold", "object/resume-"+g.id, nil, "hold")
	token := <-entered
	p.cut() // every connection through the proxy dropped at once (no close frame)
	deadline := time.Now().Add(10 * time.Second)
	for p.accepted() < 2 || !w.Connected() {
		if time.Now().After(deadline) {
			t.Fatalf("no reconnect (accepted %d)", p.accepted())
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(release)
	got := g.waitState(task, client.TaskSucceeded)
	if handlerErr != nil {
		t.Fatalf("the handler's ctx was cancelled across a resume: %v", handlerErr)
	}
	attempts := g.attempts(task)
	if len(attempts) != 1 || *attempts[0].ConcurrencyToken != token || attempts[0].WorkerID != w.ID() {
		t.Fatalf("attempts %+v (token %d, worker %s)", attempts, token, w.ID())
	}
	if string(got.Result.Output) == "" {
		t.Fatal("no output")
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// proxy forwards TCP to the gateway; cut() drops every connection it carries.
type proxy struct {
	url    string
	paused atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
	n      int
}

func newProxy(t *testing.T, target string) *proxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{url: "http://" + ln.Addr().String()}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", u.Host)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.n++
			p.mu.Unlock()
			go p.pipe(out, in)
			go p.pipe(in, out)
		}
	}()
	return p
}

// pipe copies src to dst, holding the bytes while the proxy is paused.
func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		for p.paused.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pause holds every byte in both directions (the connections stay open) until pause(false).
func (p *proxy) pause(on bool) { p.paused.Store(on) }

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// A drain that times out with no session open (the connection dropped, the reconnect not due):
// the cancelled handler's result cannot be sent; OnResult says so (ErrResultNotSent) and Run
// returns without waiting for a session. The attempt is left to its lease's expiry.
func TestDrainTimeoutNoSession(t *testing.T) {
	g := newGW(t)
	q := g.queue(0)
	p := newProxy(t, g.url)
	entered := make(chan struct{})
	reports := make(chan orbit.ResultReport, 4)
	w, err := orbit.NewWorker(orbit.Options{URL: p.url, Token: g.token, Queues: []string{q}, Capacity: 1, Logger: quiet,
		DrainTimeout: 300 * time.Millisecond,
		Reconnect:    orbit.ReconnectPolicy{InitialDelay: 20 * time.Second, MaxDelay: 20 * time.Second},
		OnResult:     func(r orbit.ResultReport) { reports <- r },
		Handlers: []orbit.Handler{{Name: "stuck", Func: func(ctx context.Context, e *orbit.Event) (any, error) {
			close(entered)
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	task := g.submit(q, "stuck", "", nil, "stuck")
	<-entered
	p.cut()
	deadline := time.Now().Add(10 * time.Second)
	for w.Connected() {
		if time.Now().After(deadline) {
			t.Fatal("the worker did not notice the dropped connection")
		}
		time.Sleep(20 * time.Millisecond)
	}
	began := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Fatalf("Run took %v to return with no session", d)
	}
	select {
	case r := <-reports:
		// The handler returned its ctx's cause: the SDK cannot know whether its effect happened.
		if r.Outcome != "unknown" || !errors.Is(r.Err, orbit.ErrResultNotSent) {
			t.Fatalf("OnResult %+v, want unknown with ErrResultNotSent", r)
		}
	default:
		t.Fatal("OnResult was not told that the result could not be sent")
	}
	if st := g.waitState(task, client.TaskRunning); st.AttemptsMade != 1 {
		t.Fatalf("task %+v", st)
	}
}
