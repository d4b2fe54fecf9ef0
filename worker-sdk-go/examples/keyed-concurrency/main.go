// Keyed-concurrency example, the Go twin of examples/keyed-concurrency/main.ts: two dedicated
// queues, one task in each with the SAME resource key, two workers of capacity 4 whose handler
// writes through the fenced resource on MySQL. Orbit grants the key to one attempt at a time with
// increasing tokens; the resource rejects a write carrying an older token. Prints exactly:
//
//	queues=2 completed=2 tokens_increasing=true
//	resource_writes=2 stale_write_rejected=true worker_drained=true
//
// and exits non-zero on any failure, within 20 s. From worker-sdk-go/, with `npm start` running in
// the repository root:
//
//	go run ./examples/keyed-concurrency
//
// Configuration (environment): ORBIT_CREDENTIALS_FILE (default ../.orbit/dev.credentials.json),
// ORBIT_URL, ORBIT_TOKEN, ORBIT_EXAMPLE_MYSQL_DSN (the database of the resource; default the
// credentials file's mysql_dsn, then `npm start`'s embedded database).
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"time"

	_ "github.com/go-sql-driver/mysql"
	orbit "github.com/orbit-tasks/orbit/worker-sdk-go"
	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
	"github.com/orbit-tasks/orbit/worker-sdk-go/examples/internal/examplekit"
	"github.com/orbit-tasks/orbit/worker-sdk-go/fenced"
)

const handler = "object.update"

func main() { examplekit.RunMain("keyed-concurrency", 20*time.Second, run) }

func run(ctx context.Context) error {
	s, err := examplekit.Load()
	if err != nil {
		return err
	}
	if s.Creds.NamespaceID == "" {
		return examplekit.Failf("the credentials file has no \"namespace_id\"")
	}
	dsn, err := s.MySQLDSN()
	if err != nil {
		return err
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	runID := s.RunID
	api := s.API

	// The resource: a fence table (highest token per key), its operation table, and the effect.
	fence, err := fenced.New(db, fenced.Options{Table: "orbit_example_fence"})
	if err != nil {
		return err
	}
	if err := fence.EnsureSchema(ctx); err != nil {
		return fmt.Errorf("the example's resource database: %w", err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS orbit_example_writes (
		id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT COMMENT 'write order',
		run_id VARCHAR(64) NOT NULL COMMENT 'example run',
		resource_key VARBINARY(768) NOT NULL COMMENT 'resource key written',
		token BIGINT UNSIGNED NOT NULL COMMENT 'fencing token of the write',
		task_id CHAR(32) NOT NULL COMMENT 'Orbit task that wrote',
		PRIMARY KEY (id), KEY ix_run (run_id)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='effects written by the keyed-concurrency example'`); err != nil {
		return err
	}
	insert := func(ctx context.Context, tx *sql.Tx, key string, token uint64, taskID string) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO orbit_example_writes (run_id, resource_key, token, task_id) VALUES (?, ?, ?, ?)",
			runID, key, strconv.FormatUint(token, 10), taskID)
		return err
	}

	// Two dedicated queues, unique per run.
	var queueIDs []string
	for _, suffix := range []string{"a", "b"} {
		name := "keyed-example-" + runID + "-" + suffix
		q, err := api.CreateQueue(ctx, "create-queue-"+name, client.CreateQueueRequest{Name: name, LeaseSeconds: 10, MaxActiveAttempts: 4})
		if err != nil {
			return err
		}
		queueIDs = append(queueIDs, q.Queue.ID)
	}

	// Two workers of capacity 4 on both queues. The handler writes through the fence with the token
	// Orbit gave this attempt; the attempt id is the operation id (a retry of the same attempt
	// would not write twice).
	update := func(ctx context.Context, e *orbit.Event) (any, error) {
		if !e.Keyed() {
			return nil, errors.New("expected a keyed task with a token")
		}
		w, err := fence.Write(ctx, fenced.Write{Namespace: s.Creds.NamespaceID, Key: e.Task.ConcurrencyKey, Token: e.ConcurrencyToken,
			OperationID: "attempt-" + e.AttemptID,
			Apply: func(ctx context.Context, tx *sql.Tx) error {
				return insert(ctx, tx, e.Task.ConcurrencyKey, e.ConcurrencyToken, e.Task.ID)
			}})
		if err != nil {
			return nil, err
		}
		return map[string]any{"token": strconv.FormatUint(e.ConcurrencyToken, 10), "applied": w.Applied}, nil
	}
	loud := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	var workers []*orbit.Worker
	runs := make([]chan error, 2)
	wctx, drain := context.WithCancel(context.Background())
	defer drain()
	for i := range runs {
		w, err := orbit.NewWorker(orbit.Options{URL: s.URL, Token: s.Token, Queues: queueIDs, Capacity: 4, Logger: loud,
			Reconnect: orbit.ReconnectPolicy{MaxAttempts: 5}, Handlers: []orbit.Handler{{Name: handler, Func: update}}})
		if err != nil {
			return err
		}
		workers = append(workers, w)
		runs[i] = make(chan error, 1)
		go func(w *orbit.Worker, done chan error) { done <- w.Run(wctx) }(w, runs[i])
	}
	for i, w := range workers {
		select {
		case <-w.Ready():
		case err := <-runs[i]:
			return fmt.Errorf("worker stopped: %w", err)
		case <-ctx.Done():
			return examplekit.Failf("a worker did not connect to %s", s.URL)
		}
	}

	// One task per queue, the same resource key.
	key := "example-object/" + runID
	var taskIDs []string
	for i, q := range queueIDs {
		r, err := api.SubmitTask(ctx, "submit-"+runID+"-"+strconv.Itoa(i), client.SubmitTaskRequest{QueueID: q, Handler: handler,
			HandlerVersion: "v1", PayloadVersion: "v1", Payload: []byte(`{"step":` + strconv.Itoa(i) + `}`), ConcurrencyKey: key})
		if err != nil {
			return err
		}
		taskIDs = append(taskIDs, r.Task.ID)
	}

	// Wait for both to finish.
	completed := 0
	for completed < len(taskIDs) {
		completed = 0
		for _, id := range taskIDs {
			t, err := api.GetTask(ctx, id)
			if err != nil {
				return err
			}
			switch t.State {
			case client.TaskFailed, client.TaskCancelled, client.TaskDeadlineExceeded, client.TaskNeedsReview:
				return examplekit.Failf("task %s ended %s: %+v", t.ID, t.State, t.Result)
			case client.TaskSucceeded:
				completed++
			}
		}
		if completed < len(taskIDs) {
			time.Sleep(100 * time.Millisecond)
		}
	}

	// The attempts API: the permits of the key, in grant order, carry increasing tokens, and the
	// second was granted only after the first finished.
	var attempts []client.Attempt
	for _, id := range taskIDs {
		as, err := api.ListAttempts(ctx, id)
		if err != nil {
			return err
		}
		for _, a := range as {
			if a.State == "SUCCEEDED" {
				attempts = append(attempts, a)
			}
		}
	}
	if len(attempts) != 2 {
		return examplekit.Failf("expected 2 succeeded attempts, found %d", len(attempts))
	}
	sort.Slice(attempts, func(i, j int) bool { return attempts[i].LeasedAt.Before(attempts[j].LeasedAt) })
	first, second := attempts[0], attempts[1]
	if first.ConcurrencyToken == nil || second.ConcurrencyToken == nil {
		return examplekit.Failf("attempts of a keyed task must carry a concurrency_token")
	}
	tokensIncreasing := *second.ConcurrencyToken > *first.ConcurrencyToken && first.FinishedAt != nil && !first.FinishedAt.After(second.LeasedAt)

	// The resource saw both writes, in token order.
	var tokens []uint64
	rows, err := db.QueryContext(ctx, "SELECT token FROM orbit_example_writes WHERE run_id = ? ORDER BY id", runID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var t uint64
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		tokens = append(tokens, t)
	}
	rows.Close()
	if len(tokens) == 2 && tokens[1] <= tokens[0] {
		return examplekit.Failf("the resource applied writes out of token order")
	}

	// A late write with the first (older) token, e.g. from a paused process whose lease ran out,
	// must be rejected by the resource.
	_, err = fence.Write(ctx, fenced.Write{Namespace: s.Creds.NamespaceID, Key: key, Token: *first.ConcurrencyToken, OperationID: "late-replay-" + runID,
		Apply: func(ctx context.Context, tx *sql.Tx) error {
			return insert(ctx, tx, key, *first.ConcurrencyToken, first.TaskID)
		}})
	var stale *fenced.StaleTokenError
	staleRejected := errors.As(err, &stale)
	if err != nil && !staleRejected {
		return err
	}
	var after int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orbit_example_writes WHERE run_id = ?", runID).Scan(&after); err != nil {
		return err
	}
	if after != len(tokens) {
		staleRejected = false
	}

	// Drain: no new work, in-flight handlers finish, results acknowledged, sessions closed with 1000.
	drain()
	drained := true
	for i, w := range workers {
		if err := <-runs[i]; err != nil {
			drained = false
		}
		if w.InFlight() != 0 || w.Connected() {
			drained = false
		}
	}

	fmt.Printf("queues=%d completed=%d tokens_increasing=%t\n", len(queueIDs), completed, tokensIncreasing)
	fmt.Printf("resource_writes=%d stale_write_rejected=%t worker_drained=%t\n", len(tokens), staleRejected, drained)
	if len(queueIDs) != 2 || completed != 2 || !tokensIncreasing || len(tokens) != 2 || !staleRejected || !drained {
		return examplekit.Failf("the run did not show what it should (see the lines above)")
	}
	return nil
}
