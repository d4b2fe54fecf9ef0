package fenced_test

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	"github.com/orbit-tasks/orbit/worker-sdk-go/fenced"
)

// openDB opens ORBIT_TEST_MYSQL_DSN (set by test/go-sdk.test.ts); the tests fail without it.
func openDB(t *testing.T) *sql.DB {
	t.Helper()
	dsn := os.Getenv("ORBIT_TEST_MYSQL_DSN")
	if dsn == "" {
		t.Fatal("ORBIT_TEST_MYSQL_DSN is not set: the fenced resource is tested against a real MariaDB (npm test sets it: test/go-sdk.test.ts)")
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newResource makes a resource on fresh tables with an effect table beside them.
func newResource(t *testing.T, db *sql.DB) (*fenced.Resource, string) {
	t.Helper()
	b := make([]byte, 4)
	_, _ = crand.Read(b)
	suffix := hex.EncodeToString(b)
	r, err := fenced.New(db, fenced.Options{Table: "go_fence_" + suffix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.EnsureSchema(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.EnsureSchema(ctx); err != nil { // idempotent
		t.Fatal(err)
	}
	effects := "go_effects_" + suffix
	if _, err := db.Exec("CREATE TABLE " + effects + " (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, token BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.Exec("DROP TABLE IF EXISTS " + r.Table() + ", " + r.OpsTable() + ", " + effects)
	})
	return r, effects
}

func write(r *fenced.Resource, effects, key string, tok uint64, op string) (fenced.Result, error) {
	return r.Write(context.Background(), fenced.Write{Namespace: "ns", Key: key, Token: tok, OperationID: op,
		Apply: func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO "+effects+" (token) VALUES (?)", tok)
			return err
		}})
}

func count(t *testing.T, db *sql.DB, effects string) int {
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + effects).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFencedWriteSemantics(t *testing.T) {
	db := openDB(t)
	r, effects := newResource(t, db)

	res, err := write(r, effects, "object/42", 5, "op-1")
	if err != nil || !res.Applied || res.HighestToken != 5 {
		t.Fatalf("first write: %+v %v", res, err)
	}
	// The same operation again: nothing runs twice.
	res, err = write(r, effects, "object/42", 5, "op-1")
	if err != nil || res.Applied || !res.Duplicate {
		t.Fatalf("replay: %+v %v", res, err)
	}
	// An older token is rejected and writes nothing.
	_, err = write(r, effects, "object/42", 4, "op-2")
	var stale *fenced.StaleTokenError
	if !errors.As(err, &stale) || stale.Token != 4 || stale.HighestToken != 5 || stale.Code() != "STALE_TOKEN" {
		t.Fatalf("stale write: %v", err)
	}
	// The same token (the same permit writing again) with a new operation is allowed.
	if res, err = write(r, effects, "object/42", 5, "op-3"); err != nil || !res.Applied {
		t.Fatalf("equal token: %+v %v", res, err)
	}
	// An operation id is bound to its key.
	_, err = write(r, effects, "object/43", 1, "op-1")
	var conflict *fenced.OperationConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("op id on another key: %v", err)
	}
	// Keys compare as exact bytes: another case is another key.
	if res, err = write(r, effects, "Object/42", 1, "op-4"); err != nil || !res.Applied {
		t.Fatalf("key of another case: %+v %v", res, err)
	}
	// The largest token is stored and read back exactly.
	const maxTok = ^uint64(0)
	if res, err = write(r, effects, "object/42", maxTok, "op-5"); err != nil || res.HighestToken != maxTok {
		t.Fatalf("max token: %+v %v", res, err)
	}
	if h, err := r.HighestToken(context.Background(), "ns", "object/42"); err != nil || h != maxTok {
		t.Fatalf("HighestToken %d %v", h, err)
	}
	if h, err := r.HighestToken(context.Background(), "ns", "never"); err != nil || h != 0 {
		t.Fatalf("HighestToken of an unknown key %d %v", h, err)
	}
	// An effect that fails rolls the operation back: the fence is not raised, the id stays free.
	boom := errors.New("effect failed")
	_, err = r.Write(context.Background(), fenced.Write{Namespace: "ns", Key: "object/44", Token: 9, OperationID: "op-6",
		Apply: func(context.Context, *sql.Tx) error { return boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("failing effect: %v", err)
	}
	if h, _ := r.HighestToken(context.Background(), "ns", "object/44"); h != 0 {
		t.Fatalf("a rolled-back write raised the fence to %d", h)
	}
	if res, err = write(r, effects, "object/44", 9, "op-6"); err != nil || !res.Applied {
		t.Fatalf("retry of the rolled-back operation: %+v %v", res, err)
	}
	if n := count(t, db, effects); n != 5 {
		t.Fatalf("%d effects, want 5 (op-1, op-3, op-4, op-5, op-6)", n)
	}
	if _, err := r.Write(context.Background(), fenced.Write{Namespace: "ns", Key: "k", Token: 0, OperationID: "x"}); err == nil {
		t.Fatal("token 0 accepted")
	}
}

// Concurrent writers with shuffled tokens on one key: the effects commit in non-decreasing token
// order (a write is never applied after a higher token's), and exactly the writes that were not
// rejected are applied.
func TestFencedConcurrentWriters(t *testing.T) {
	db := openDB(t)
	db.SetMaxOpenConns(8)
	r, effects := newResource(t, db)
	tokens := rand.Perm(40)
	var wg sync.WaitGroup
	var mu sync.Mutex
	applied, stale := 0, 0
	for _, p := range tokens {
		wg.Add(1)
		go func(tok uint64) {
			defer wg.Done()
			res, err := write(r, effects, "hot", tok, "op-"+strconv.FormatUint(tok, 10))
			mu.Lock()
			defer mu.Unlock()
			var s *fenced.StaleTokenError
			switch {
			case err == nil && res.Applied:
				applied++
			case errors.As(err, &s):
				stale++
			default:
				t.Errorf("token %d: %+v %v", tok, res, err)
			}
		}(uint64(p + 1))
	}
	wg.Wait()
	if applied+stale != 40 || applied == 0 {
		t.Fatalf("applied %d stale %d", applied, stale)
	}
	if n := count(t, db, effects); n != applied {
		t.Fatalf("%d effects, %d applied", n, applied)
	}
	rows, err := db.Query("SELECT token FROM " + effects + " ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var prev uint64
	for rows.Next() {
		var tok uint64
		if err := rows.Scan(&tok); err != nil {
			t.Fatal(err)
		}
		if tok < prev {
			t.Fatalf("token %d applied after %d", tok, prev)
		}
		prev = tok
	}
	if h, _ := r.HighestToken(context.Background(), "ns", "hot"); h != 40 {
		t.Fatalf("highest %d, want 40", h)
	}
}
