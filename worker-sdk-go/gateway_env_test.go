package orbit_test

// What the tests against a real gateway share: the ORBIT_TEST_* environment that
// test/go-sdk.test.ts sets (they fail, never skip, without it), a fresh queue per test, submits
// and polls through the client package, and a quiet logger.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
)

type gw struct {
	t     *testing.T
	id    string
	url   string
	token string
	api   *client.Client
}

func newGW(t *testing.T) *gw {
	t.Helper()
	get := func(name string) string {
		v := os.Getenv(name)
		if v == "" {
			t.Fatalf("%s is not set: the worker's tests run against a real gateway (npm test sets ORBIT_TEST_URL, ORBIT_TEST_TOKEN, ORBIT_TEST_QUEUE_ID, ORBIT_TEST_MYSQL_DSN: test/go-sdk.test.ts)", name)
		}
		return v
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	g := &gw{t: t, id: hex.EncodeToString(b), url: get("ORBIT_TEST_URL"), token: get("ORBIT_TEST_TOKEN")}
	get("ORBIT_TEST_QUEUE_ID")
	g.api = client.New(g.url, g.token)
	return g
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// key is an idempotency key or name unique to this test and run.
func (g *gw) key(parts ...string) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(g.t.Name()))
	k := "gw-" + g.id + "-" + name + "-" + strings.Join(parts, "-")
	if len(k) > 64 {
		k = k[len(k)-64:]
	}
	return strings.Trim(k, "-")
}

// queue creates a fresh queue (short lease unless given) and returns its id.
func (g *gw) queue(leaseSeconds int) string {
	g.t.Helper()
	if leaseSeconds == 0 {
		leaseSeconds = 30
	}
	r, err := g.api.CreateQueue(ctxFor(g.t, 10*time.Second), g.key("q"), client.CreateQueueRequest{Name: g.key("q"), LeaseSeconds: leaseSeconds,
		Retry: &client.RetryPolicy{MaxAttempts: 3, InitialBackoffMS: 100, MaxBackoffMS: 100, Multiplier: 1}})
	if err != nil {
		g.t.Fatalf("CreateQueue: %v", err)
	}
	return r.Queue.ID
}

func (g *gw) submit(queueID, handler, key string, payload any, ikey string) string {
	g.t.Helper()
	p, _ := json.Marshal(payload)
	r, err := g.api.SubmitTask(ctxFor(g.t, 10*time.Second), g.key("submit", ikey), client.SubmitTaskRequest{
		QueueID: queueID, Handler: handler, HandlerVersion: "v1", PayloadVersion: "v1", Payload: p, ConcurrencyKey: key})
	if err != nil {
		g.t.Fatalf("SubmitTask: %v", err)
	}
	return r.Task.ID
}

// waitState polls the task until it is in one of states (fails after 20 s).
func (g *gw) waitState(taskID string, states ...string) *client.Task {
	g.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		task, err := g.api.GetTask(ctxFor(g.t, 10*time.Second), taskID)
		if err != nil {
			g.t.Fatalf("GetTask: %v", err)
		}
		for _, s := range states {
			if task.State == s {
				return task
			}
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("task %s is %s after 20 s, want %v", taskID, task.State, states)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (g *gw) attempts(taskID string) []client.Attempt {
	g.t.Helper()
	a, err := g.api.ListAttempts(ctxFor(g.t, 10*time.Second), taskID)
	if err != nil {
		g.t.Fatalf("ListAttempts: %v", err)
	}
	return a
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testLogger logs to the test's output (shown on failure).
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
