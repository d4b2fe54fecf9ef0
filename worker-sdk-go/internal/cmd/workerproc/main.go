// Command workerproc is a worker process on the Go SDK for the chaos tests and the benchmark: the
// Go twin of bench/worker-proc.ts and bench/fenced-worker-proc.ts, with their environment and
// their JSON lines on stdout, so test/support/workers.ts and bench/ drive either.
//
//	ORBIT_URL, ORBIT_TOKEN, WORKER_QUEUES (comma-separated ids), WORKER_CAPACITY (default 8),
//	WORKER_PREFETCH (default 0), WORKER_HANDLER (default "h"), WORKER_DELAY_MS (the handler sleeps a random 0..N ms, default 0),
//	WORKER_LOG_RUNS=1 ({"ev":"run"} and {"ev":"done"} per handler), WORKER_LATENCY=1 and
//	WORKER_PROGRESS_MS=N (the benchmark's lines, as worker-proc.ts prints them).
//	FENCE_DSN (mysql://… or go-sql-driver form) with FENCE_NAMESPACE and FENCE_TABLE (default
//	chaos_fence): every keyed task writes through the fenced resource into chaos_writes, as
//	fenced-worker-proc.ts does — deliberately a zombie when its lease is lost: it ignores its ctx
//	and still tries its write, so a stale token reaches the fence. Lines {"ev":"begin"|"writing"},
//	{"ev":"write"} per applied write, {"ev":"stale"} per rejected one. WORKER_HOLD_MS=N waits
//	exactly N ms before the write (after WORKER_DELAY_MS's random wait): a test can freeze the
//	process at a known point.
//
// WORKER_CPU_PROFILE=FILE writes a Go CPU profile there at exit (`go tool pprof FILE`): the
// benchmark's ORBIT_BENCH_CPU_PROF for Go workers.
//
// Lines: {"ev":"ready","worker_id","t","cpu_ms"} once connected, {"ev":"fatal","message"} and exit 3 when the
// worker stops for good. SIGTERM or SIGINT drains and exits 0.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql"
	orbit "github.com/orbit-tasks/orbit/worker-sdk-go"
	"github.com/orbit-tasks/orbit/worker-sdk-go/fenced"
)

var outMu sync.Mutex

// out prints one JSON line; a pipe write is synchronous, so a line is out even if the process is
// frozen or killed right after.
func out(fields map[string]any) {
	b, _ := json.Marshal(fields)
	outMu.Lock()
	defer outMu.Unlock()
	_, _ = os.Stdout.Write(append(b, '\n'))
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func main() {
	stopProfile := func() {}
	if file := os.Getenv("WORKER_CPU_PROFILE"); file != "" {
		f, err := os.Create(file)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
		}
	}
	code := run()
	stopProfile()
	os.Exit(code)
}

func run() int {
	delay := time.Duration(envInt("WORKER_DELAY_MS", 0)) * time.Millisecond
	logRuns := os.Getenv("WORKER_LOG_RUNS") == "1"
	handlerName := os.Getenv("WORKER_HANDLER")
	if handlerName == "" {
		handlerName = "h"
	}
	fence := openFence()
	stats := newProgress(time.Duration(envInt("WORKER_PROGRESS_MS", 0))*time.Millisecond, os.Getenv("WORKER_LATENCY") == "1")

	handle := func(ctx context.Context, e *orbit.Event) (any, error) {
		tok := strconv.FormatUint(e.ConcurrencyToken, 10)
		if logRuns {
			out(map[string]any{"ev": "run", "task": e.Task.ID, "attempt": e.AttemptID, "key": e.Task.ConcurrencyKey, "token": tok, "t": time.Now().UnixMilli()})
		}
		if fence != nil {
			return fence.write(e, delay)
		}
		if delay > 0 {
			time.Sleep(time.Duration(rand.Int64N(int64(delay))))
		}
		if logRuns {
			out(map[string]any{"ev": "done", "task": e.Task.ID, "attempt": e.AttemptID, "t": time.Now().UnixMilli()})
		}
		stats.handled(e.AttemptID)
		var p struct {
			Params struct {
				Items *int `json:"items"`
				Fail  bool `json:"fail"`
			} `json:"params"`
		}
		_ = json.Unmarshal(e.Task.Payload, &p)
		if p.Params.Fail {
			return nil, &orbit.PermanentError{Code: "HANDLER_ERROR", Err: errPlanned}
		}
		if p.Params.Items != nil {
			items := make([]int, *p.Params.Items)
			for i := range items {
				items[i] = i
			}
			return items, nil
		}
		return okOutput, nil
	}
	w, err := orbit.NewWorker(orbit.Options{
		URL: os.Getenv("ORBIT_URL"), Token: os.Getenv("ORBIT_TOKEN"), Queues: strings.Split(os.Getenv("WORKER_QUEUES"), ","),
		Capacity: envInt("WORKER_CAPACITY", 8), Prefetch: envInt("WORKER_PREFETCH", 0), Handlers: []orbit.Handler{{Name: handlerName, Func: handle}},
		// The chaos tests restart and kill gateways under these workers: a quick reconnect.
		Reconnect:    orbit.ReconnectPolicy{InitialDelay: 50 * time.Millisecond, MaxDelay: time.Second},
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnResult:     func(r orbit.ResultReport) { stats.result(r.AttemptID) },
		DrainTimeout: 8 * time.Second,
	})
	if err != nil {
		out(map[string]any{"ev": "fatal", "message": err.Error()})
		return 3
	}
	stats.inFlight = w.InFlight
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-w.Ready()
		// The moment and the process's CPU at the first connection: the bench counts a worker's
		// CPU from here, as it does the Node worker's, so start-up is not a task's cost.
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		cpuMs := float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
		out(map[string]any{"ev": "ready", "worker_id": w.ID(), "t": float64(time.Now().UnixNano()) / 1e6, "cpu_ms": cpuMs})
	}()
	err = w.Run(ctx)
	stats.finish()
	if err != nil {
		out(map[string]any{"ev": "fatal", "message": err.Error()})
		return 3
	}
	return 0
}

var okOutput = json.RawMessage(`{"ok":true}`)

var errPlanned = errors.New("planned failure")

// fenceWriter writes every keyed task through the fenced resource (FENCE_DSN set).
type fenceWriter struct {
	res       *fenced.Resource
	db        *sql.DB
	namespace string
	hold      time.Duration
}

func openFence() *fenceWriter {
	dsn := os.Getenv("FENCE_DSN")
	if dsn == "" {
		return nil
	}
	db, err := sql.Open("mysql", goDSN(dsn))
	if err != nil {
		out(map[string]any{"ev": "fatal", "message": err.Error()})
		os.Exit(3)
	}
	db.SetMaxOpenConns(4)
	table := os.Getenv("FENCE_TABLE")
	if table == "" {
		table = "chaos_fence"
	}
	res, err := fenced.New(db, fenced.Options{Table: table})
	if err != nil {
		out(map[string]any{"ev": "fatal", "message": err.Error()})
		os.Exit(3)
	}
	return &fenceWriter{res: res, db: db, namespace: os.Getenv("FENCE_NAMESPACE"), hold: time.Duration(envInt("WORKER_HOLD_MS", 0)) * time.Millisecond}
}

// write ignores the handler's ctx on purpose (a zombie after a lost lease): the write is tried
// with the attempt's token, and the fence decides.
func (f *fenceWriter) write(e *orbit.Event, delay time.Duration) (any, error) {
	out(map[string]any{"ev": "begin", "attempt": e.AttemptID})
	if delay > 0 {
		time.Sleep(time.Duration(rand.Int64N(int64(delay))))
	}
	time.Sleep(f.hold)
	key, tok := e.Task.ConcurrencyKey, strconv.FormatUint(e.ConcurrencyToken, 10)
	out(map[string]any{"ev": "writing", "attempt": e.AttemptID})
	_, err := f.res.Write(context.Background(), fenced.Write{Namespace: f.namespace, Key: key, Token: e.ConcurrencyToken, OperationID: e.AttemptID,
		Apply: func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO chaos_writes (resource_key, token, attempt_id, task_id, pid) VALUES (?, ?, ?, ?, ?)",
				key, tok, e.AttemptID, e.Task.ID, os.Getpid())
			return err
		}})
	var stale *fenced.StaleTokenError
	switch {
	case err == nil:
		out(map[string]any{"ev": "write", "attempt": e.AttemptID, "key": key, "token": tok})
		return okOutput, nil
	case errors.As(err, &stale):
		out(map[string]any{"ev": "stale", "attempt": e.AttemptID, "key": key, "token": tok, "highest": strconv.FormatUint(stale.HighestToken, 10)})
	}
	return nil, err
}

func goDSN(d string) string {
	rest, ok := strings.CutPrefix(d, "mysql://")
	if !ok {
		return d
	}
	userinfo, hostdb, _ := strings.Cut(rest, "@")
	host, db, _ := strings.Cut(hostdb, "/")
	return userinfo + "@tcp(" + host + ")/" + db
}
