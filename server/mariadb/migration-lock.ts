// The migration runner's lock: a lease row, replicated like any data, since GET_LOCK lives in one
// Galera node's memory. Taking it is an autocommit UPDATE WHERE free or expired, which
// certification orders across nodes. A renew that matches nothing means the lease was taken over,
// and the runner stops before its next statement. A killed runner holds it until the lease ends.
import crypto from 'node:crypto';
import type { Pool } from '../db/pool.js';
import { isRetryableDbError } from '../db/errors.js';

export const MIGRATION_LEASE_SECONDS = 60;
const RENEW_MS = 10_000;
const POLL_MS = 250;

const CREATE_LOCK_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations_lock (
  id TINYINT UNSIGNED NOT NULL COMMENT 'always 1: one migration lock per database',
  holder CHAR(32) CHARACTER SET ascii NULL COMMENT 'random id of the orbit-migrate run holding the lock; NULL when free',
  expires_at DATETIME(3) NULL COMMENT 'database-clock time the holder''s lease ends unless renewed (UTC)',
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='lease row serializing orbit-migrate runs on every node of a cluster (created by the runner, not a migration)'`;

/** Retried on conflicts: the lock's statements are tiny and idempotent. */
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

export async function takeMigrationLock(pool: Pool, waitSeconds: number) {
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
      // A refused renew is tried again at the next tick; the lease outlasts several.
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
