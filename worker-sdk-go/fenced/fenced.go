// Package fenced is the reference resource-side fencing check for resources kept in MySQL or
// MariaDB (docs/guarantees.md, "The fencing token (concurrency_token)"), the Go twin of the Node SDK's
// worker-sdk/fenced-resource.ts: the same two tables and the same semantics, so Go and Node
// workers can share one resource.
//
// A write is ONE transaction holding the fence row's lock: it rejects a token lower than the
// highest one the key has seen, raises the highest token, records the operation id (a retry of the
// same operation applies nothing twice) and runs the effect. Checking the highest token and
// writing separately would race; a mutex inside one worker protects neither several processes nor
// external systems. The token only rejects writes older than one the resource has already seen: it
// does not prove the caller's lease is still valid, and it replaces neither authentication nor
// operation idempotency.
package fenced

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/go-sql-driver/mysql"
)

// Options configure a Resource.
type Options struct {
	// Table is the fence table (default orbit_fence); the operation table is Table + "_ops".
	Table string
	// MaxRetries is how often the whole transaction is retried after a deadlock or a lock-wait
	// timeout (default 5).
	MaxRetries int
}

// Write is one fenced write.
type Write struct {
	// Namespace is the isolation scope of the key (e.g. the Orbit namespace id).
	Namespace string
	// Key is the resource key (the task's concurrency_key), compared as exact bytes.
	Key string
	// Token is Event.ConcurrencyToken: exact, 1..2^64-1.
	Token uint64
	// OperationID is the stable id of this logical operation: a retry of it must reuse it.
	OperationID string
	// Apply writes the effect on the transaction; an error rolls everything back.
	Apply func(ctx context.Context, tx *sql.Tx) error
}

// Result is what a write did.
type Result struct {
	// Applied: Apply ran and committed.
	Applied bool
	// Duplicate: this operation id had already been applied; nothing ran again.
	Duplicate bool
	// HighestToken is the highest token the key has seen after this write.
	HighestToken uint64
}

// StaleTokenError: the write carries a token lower than one the resource already saw for the key —
// a newer permit exists and this writer must stop. Nothing was written.
type StaleTokenError struct {
	Namespace, Key      string
	Token, HighestToken uint64
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("stale fencing token %d for %s/%s: highest seen is %d", e.Token, e.Namespace, e.Key, e.HighestToken)
}

// Code is the stable code of the error (STALE_TOKEN).
func (e *StaleTokenError) Code() string { return "STALE_TOKEN" }

// OperationConflictError: the operation id was already used for another resource key.
type OperationConflictError struct{ OperationID string }

func (e *OperationConflictError) Error() string {
	return fmt.Sprintf("operation %s was already applied to another key", e.OperationID)
}

// Code is the stable code of the error (OPERATION_CONFLICT).
func (e *OperationConflictError) Code() string { return "OPERATION_CONFLICT" }

// Resource is a fenced resource on one database.
type Resource struct {
	db         *sql.DB
	table, ops string
	maxRetries int
}

var tableRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,57}$`) // leaves room for "_ops"

// New returns the fenced resource on db (go-sql-driver/mysql).
func New(db *sql.DB, opts Options) (*Resource, error) {
	table := opts.Table
	if table == "" {
		table = "orbit_fence"
	}
	if !tableRE.MatchString(table) {
		return nil, fmt.Errorf("fenced: table name %q must match %s", table, tableRE)
	}
	r := &Resource{db: db, table: table, ops: table + "_ops", maxRetries: opts.MaxRetries}
	if r.maxRetries <= 0 {
		r.maxRetries = 5
	}
	return r, nil
}

// Table and OpsTable name the resource's two tables.
func (r *Resource) Table() string    { return r.table }
func (r *Resource) OpsTable() string { return r.ops }

// EnsureSchema creates both tables if missing (the Node SDK's shape: either SDK may create them).
func (r *Resource) EnsureSchema(ctx context.Context) error {
	// Keys are VARBINARY: they compare as exact UTF-8 bytes (no case folding, no normalization),
	// like Orbit's own resource keys. No foreign keys; integrity comes from the transaction.
	if _, err := r.db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS `"+r.table+"` (\n"+
		"namespace VARBINARY(255) NOT NULL COMMENT 'isolation scope of the key (e.g. Orbit namespace id)',\n"+
		"resource_key VARBINARY(768) NOT NULL COMMENT 'resource key as exact UTF-8 bytes (the task concurrency_key)',\n"+
		"highest_token BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'highest fencing token seen for the key; never decreases',\n"+
		"updated_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3) COMMENT 'last time a write raised or used the token (UTC)',\n"+
		"PRIMARY KEY (namespace, resource_key)\n"+
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='fencing state per resource key: writes with a lower token are rejected'"); err != nil {
		return err
	}
	_, err := r.db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS `"+r.ops+"` (\n"+
		"namespace VARBINARY(255) NOT NULL COMMENT 'isolation scope of the operation id',\n"+
		"operation_id VARBINARY(255) NOT NULL COMMENT 'stable id of one logical write; unique per namespace',\n"+
		"resource_key VARBINARY(768) NOT NULL COMMENT 'resource key the operation wrote',\n"+
		"token BIGINT UNSIGNED NOT NULL COMMENT 'fencing token the operation was applied with',\n"+
		"applied_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3) COMMENT 'when the operation committed (UTC)',\n"+
		"PRIMARY KEY (namespace, operation_id)\n"+
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='applied operations, for exactly-once effects under retries'")
	return err
}

// Write runs one fenced write: a *StaleTokenError when a newer token was seen, an
// *OperationConflictError when the operation id belongs to another key, Apply's error as is.
func (r *Resource) Write(ctx context.Context, w Write) (Result, error) {
	switch {
	case w.Token == 0:
		return Result{}, errors.New("fenced: token must be 1..2^64-1 (Event.ConcurrencyToken of a keyed task)")
	case w.OperationID == "" || len(w.OperationID) > 255:
		return Result{}, errors.New("fenced: operation id must be 1-255 bytes")
	case w.Key == "" || len(w.Key) > 768:
		return Result{}, errors.New("fenced: key must be 1-768 bytes")
	case len(w.Namespace) > 255:
		return Result{}, errors.New("fenced: namespace must be at most 255 bytes")
	}
	for i := 0; ; i++ {
		res, err := r.attempt(ctx, w)
		// A deadlock rolled the whole transaction back (Apply included): running it again is safe.
		var me *mysql.MySQLError
		if err != nil && i < r.maxRetries && errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205) {
			continue
		}
		return res, err
	}
}

func (r *Resource) attempt(ctx context.Context, w Write) (res Result, err error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return Result{}, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	tok := strconv.FormatUint(w.Token, 10) // BIGINT UNSIGNED goes to SQL as a decimal string
	// Lock the fence row, creating it on first use. INSERT … ON DUPLICATE KEY UPDATE takes the
	// row's exclusive lock directly: a SELECT … FOR UPDATE on a missing row followed by an INSERT
	// would let two first writers deadlock on the gap.
	if _, err = tx.ExecContext(ctx, "INSERT INTO `"+r.table+"` (namespace, resource_key, highest_token) VALUES (?, ?, 0) "+
		"ON DUPLICATE KEY UPDATE highest_token = highest_token", w.Namespace, w.Key); err != nil {
		return Result{}, err
	}
	var highestText string
	if err = tx.QueryRowContext(ctx, "SELECT CAST(highest_token AS CHAR) FROM `"+r.table+"` WHERE namespace = ? AND resource_key = ? FOR UPDATE",
		w.Namespace, w.Key).Scan(&highestText); err != nil {
		return Result{}, err
	}
	highest, err := strconv.ParseUint(highestText, 10, 64)
	if err != nil {
		return Result{}, err
	}
	if w.Token < highest {
		return Result{}, &StaleTokenError{Namespace: w.Namespace, Key: w.Key, Token: w.Token, HighestToken: highest}
	}
	// An equal token is the same permit writing again: allowed. A larger one raises the fence.
	next := max(w.Token, highest)
	if w.Token > highest {
		if _, err = tx.ExecContext(ctx, "UPDATE `"+r.table+"` SET highest_token = ?, updated_at = UTC_TIMESTAMP(3) WHERE namespace = ? AND resource_key = ?",
			tok, w.Namespace, w.Key); err != nil {
			return Result{}, err
		}
	}
	var storedKey []byte
	switch err = tx.QueryRowContext(ctx, "SELECT resource_key FROM `"+r.ops+"` WHERE namespace = ? AND operation_id = ? FOR UPDATE",
		w.Namespace, w.OperationID).Scan(&storedKey); {
	case err == nil:
		if string(storedKey) != w.Key {
			return Result{}, &OperationConflictError{OperationID: w.OperationID}
		}
		if err = tx.Commit(); err != nil { // keeps the raised fence: a legitimate token was seen
			return Result{}, err
		}
		return Result{Duplicate: true, HighestToken: next}, nil
	case !errors.Is(err, sql.ErrNoRows):
		return Result{}, err
	}
	if _, err = tx.ExecContext(ctx, "INSERT INTO `"+r.ops+"` (namespace, operation_id, resource_key, token) VALUES (?, ?, ?, ?)",
		w.Namespace, w.OperationID, w.Key, tok); err != nil {
		return Result{}, err
	}
	if w.Apply != nil {
		if err = w.Apply(ctx, tx); err != nil {
			return Result{}, err
		}
	}
	if err = tx.Commit(); err != nil {
		return Result{}, err
	}
	return Result{Applied: true, HighestToken: next}, nil
}

// HighestToken is the highest token seen for a key (0 when never written).
func (r *Resource) HighestToken(ctx context.Context, namespace, key string) (uint64, error) {
	var text string
	err := r.db.QueryRowContext(ctx, "SELECT CAST(highest_token AS CHAR) FROM `"+r.table+"` WHERE namespace = ? AND resource_key = ?", namespace, key).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(text, 10, 64)
}
