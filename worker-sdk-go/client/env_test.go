package client_test

// What every test against the gateway shares: the environment the runner sets (a gateway, a
// credential with every scope on a fresh namespace, its queue and the database), names and keys
// unique to this run (so a second run against the same gateway replays nothing), and a fresh
// queue per test.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
)

type env struct {
	t *testing.T
	// id makes this test's names and keys unique, also under -count=N against one gateway.
	id      string
	c       *client.Client
	url     string
	queueID string
	dsn     string
}

// newEnv fails the test, rather than skipping it, when the gateway is not configured: a green run
// that tested nothing would look like a passing SDK.
func newEnv(t *testing.T) *env {
	t.Helper()
	get := func(name string) string {
		v := os.Getenv(name)
		if v == "" {
			t.Fatalf("%s is not set: the client's tests run against a real gateway (npm test starts one; by hand, use .orbit/dev.credentials.json of `npm start`)", name)
		}
		return v
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	e := &env{t: t, id: hex.EncodeToString(b), url: get("ORBIT_TEST_URL"), queueID: get("ORBIT_TEST_QUEUE_ID"), dsn: get("ORBIT_TEST_MYSQL_DSN")}
	e.c = client.New(e.url, get("ORBIT_TEST_TOKEN"), client.WithUserAgent("orbit-go-client-test"))
	return e
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// key is an idempotency key unique to this test run: the same parts give the same key.
func (e *env) key(parts ...string) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(e.t.Name()))
	return "go-" + e.id + "-" + name + "-" + strings.Join(parts, "-")
}

// name is a resource name unique to this test run: 1-64 of [a-z0-9._-].
func (e *env) name(kind string) string {
	n := e.key(kind)
	if len(n) > 64 {
		n = n[len(n)-64:]
	}
	return strings.TrimLeft(n, "-")
}

func (e *env) newQueue(t *testing.T) *client.Queue {
	t.Helper()
	r, err := e.c.CreateQueue(ctxOf(t), e.key("create-queue"), client.CreateQueueRequest{Name: e.name("q")})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	return &r.Queue
}

func (e *env) submit(t *testing.T, queueID, k string) *client.Task {
	t.Helper()
	r, err := e.c.SubmitTask(ctxOf(t), k, task(queueID, `{"n":1}`))
	if err != nil {
		t.Fatalf("SubmitTask: %v", err)
	}
	return &r.Task
}

func task(queueID, payload string) client.SubmitTaskRequest {
	return client.SubmitTaskRequest{QueueID: queueID, Handler: "object.update", HandlerVersion: "v1", PayloadVersion: "v1",
		Payload: []byte(payload)}
}

// wantCode fails unless err is an *APIError with code, and returns it.
func wantCode(t *testing.T, err error, code string) *client.APIError {
	t.Helper()
	var e *client.APIError
	if !errors.As(err, &e) {
		t.Fatalf("want an *APIError %s, got %v", code, err)
	}
	if e.Code != code {
		t.Fatalf("want %s, got %v", code, e)
	}
	return e
}

// db opens the gateway's database; the variable may be a Go DSN or the mysql:// URL that
// `npm start` writes.
func (e *env) db(t *testing.T) *sql.DB {
	t.Helper()
	dsn := e.dsn
	if u, err := url.Parse(dsn); err == nil && u.Scheme == "mysql" {
		cfg := mysql.NewConfig()
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, strings.TrimPrefix(u.Path, "/")
		dsn = cfg.FormatDSN()
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatalf("ORBIT_TEST_MYSQL_DSN: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
