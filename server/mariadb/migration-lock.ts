// The migration runner's lock: a lease row in schema_migrations_lock, a table the runner creates
// itself (like schema_migrations) before any migration runs, so the lock never depends on what the
// migrations create.
//
// Why a row and not GET_LOCK: named locks live in one server's memory. Under Galera each node has
// its own (two runners on two nodes both get "the" lock), and MariaDB 10.6.13 and the releases of
// that month refused GET_LOCK outright with wsrep_on=ON (MDEV-30473; lifted by MDEV-31325).
// A SELECT … FOR UPDATE is no better: its lock ends at the first DDL's implicit commit and, across
// Galera nodes, is only checked at certification. A committed row is replicated like any data:
//
//   take    UPDATE … SET holder = me, expires_at = now + lease WHERE id = 1 AND (free OR expired)
//           (autocommit). Two runners on two nodes that both match locally are ordered by
//           certification: the second gets 1213 (or, retried by wsrep_retry_autocommit, sees the
//           first one's row and matches nothing). Either way exactly one affectedRows = 1.
//   renew   every RENEW_MS on a pool connection, WHERE holder = me. A renew that matches nothing
//           means the lease was taken over (this runner stalled past the lease): the runner stops
//           before its next statement instead of interleaving with the new holder.
//   release holder = NULL WHERE holder = me.
//
// A runner killed with -9 leaves its row until the lease (database clock) ends; the next runner
// waits at most that long. Liquibase's DATABASECHANGELOGLOCK and knex's knex_migrations_lock are
// the same table-row design without an expiry (a killed run needs `release-locks` by hand).
import crypto from 'node:crypto';
import type { Pool } from '../db/pool.js';
import { isRetryableDbError } from '../db/errors.js';

/** Seconds a holder keeps the lock without renewing it. */
export const MIGRATION_LEASE_SECONDS = 60;
const RENEW_MS = 10_000;
const POLL_MS = 250;

const CREATE_LOCK_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations_lock (
  id TINYINT UNSIGNED NOT NULL COMMENT 'always 1: one migration lock per database',
  holder CHAR(32) CHARACTER SET ascii NULL COMMENT 'random id of the orbit-migrate run holding the lock; NULL when free',
  expires_at DATETIME(3) NULL COMMENT 'database-clock time the holder''s lease ends unless renewed (UTC)',
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='lease row serializing orbit-migrate runs on every node of a cluster (created by the runner, not a migration)'`;

export interface MigrationLock {
  /** Throws when the lease was lost (taken over after this runner stalled past it). */
  assertHeld(): void;
  release(): Promise<void>;
}

/** A statement retried while the database refuses it as a conflict (1213 certification failure,
 * 1205 lock wait): the lock's statements are tiny and idempotent. */
async function run(pool: Pool, sql: string, args: unknown[] = []): Promise<number> {
  for (let tries = 1; ; tries++) {
    try {
      const [res] = await pool.query(sql, args);
      return (res as { affectedRows?: number }).affectedRows ?? 0;
    } catch (err) {
      if (!isRetryableDbError(err) || tries >= 8) throw err;
      await new Promise((r) => setTimeout(r, 20 * tries));
    }
  }
}

/** takeMigrationLock(wait_seconds): creates the lock table and its row when missing, then waits up
 * to `waitSeconds` for the lease. */
export async function takeMigrationLock(pool: Pool, waitSeconds: number): Promise<MigrationLock> {
  await run(pool, CREATE_LOCK_TABLE);
  await run(pool, 'INSERT IGNORE INTO schema_migrations_lock (id, holder, expires_at) VALUES (1, NULL, NULL)');
  const me = crypto.randomBytes(16).toString('hex');
  const until = Date.now() + waitSeconds * 1000;
  for (;;) {
    const got = await run(
      pool,
      `UPDATE schema_migrations_lock SET holder = ?, expires_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND
        WHERE id = 1 AND (holder IS NULL OR expires_at < UTC_TIMESTAMP(3))`,
      [me, MIGRATION_LEASE_SECONDS],
    );
    if (got === 1) break;
    if (Date.now() >= until) {
      throw new Error(`could not take the migration lock within ${waitSeconds} s (another \`orbit-migrate up\` is running)`);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  let lost = false;
  let renewing: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    renewing = run(pool, 'UPDATE schema_migrations_lock SET expires_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND WHERE id = 1 AND holder = ?', [
      MIGRATION_LEASE_SECONDS,
      me,
    ]).then(
      (n) => void (n === 0 && (lost = true)),
      // A renew the database refused is tried again at the next tick; the lease outlasts several.
      () => {},
    );
  }, RENEW_MS);
  timer.unref();
  return {
    assertHeld() {
      if (lost) throw new Error('the migration lock was taken over by another `orbit-migrate up` (this run stalled past its lease); nothing more was applied');
    },
    async release() {
      clearInterval(timer);
      await renewing;
      await run(pool, 'UPDATE schema_migrations_lock SET holder = NULL, expires_at = NULL WHERE id = 1 AND holder = ?', [me]);
    },
  };
}
