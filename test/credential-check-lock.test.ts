// The credential check with the clock (liveCredentialsWithClockSql, the first statement of every
// coalesced claim, start and result transaction) must hold a share lock on each live credential's
// row to the end of its transaction, so that a revocation's UPDATE waits for it (docs/design.md: a
// command either commits before the revocation or is refused). Both of its forms — the scalar
// subquery of one credential and the join of several — are held here on one connection while
// another revokes: the revoke must wait on the lock (out to its lock wait timeout), and go through
// only after the check's COMMIT.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { liveCredentialsWithClockOf, liveCredentialsWithClockSql, revokeCredential } from '../server/db/credentials.js';
import { createTestDb, type TestDb } from './support/db.js';

let db: TestDb;
const idOf = (n: number) => n.toString(16).padStart(32, '0');

beforeAll(async () => {
  db = await createTestDb();
  await db.pool.query(`INSERT INTO credentials (id, namespace_id, name, token_hash, scopes, created_at) VALUES ?`, [
    [1, 2, 3, 4].map((n) => [idOf(n), 'n'.repeat(32), `c${n}`, Buffer.alloc(32, n), 'worker', '2026-01-01']),
  ]);
});
afterAll(async () => {
  await db.drop();
});

/** ER_LOCK_WAIT_TIMEOUT: the revoke waited its (shortened) lock wait timeout out. */
const LOCK_WAIT_TIMEOUT = 1205;

async function checkThenRevoke(checked: string[], revoked: string) {
  const [a, b] = await Promise.all([db.pool.getConnection(), db.pool.getConnection()]);
  try {
    await a.query('START TRANSACTION');
    const [rows] = await a.query<RowDataPacket[]>(...liveCredentialsWithClockSql(checked));
    const check = liveCredentialsWithClockOf(rows);
    // While the check's transaction runs on, the revoke waits for its share lock: with a 1 s lock
    // wait timeout it fails with 1205 (without the lock it would go through at once). Watching
    // information_schema.INNODB_TRX for the waiting revoke was tried first: MariaDB 10.11 did not
    // always list an autocommit UPDATE waiting for its first lock there.
    await b.query('SET SESSION innodb_lock_wait_timeout = 1');
    const whileHeld = await revokeCredential(b, revoked).then(
      () => 'went through',
      (err: { errno?: number }) => err.errno,
    );
    await a.query('COMMIT');
    return { check, whileHeld, revokedAfterCommit: await revokeCredential(b, revoked) };
  } finally {
    a.release();
    b.destroy(); // its session lock wait timeout must not go back to the pool
  }
}

describe('the credential check with the clock holds a share lock that a revocation waits for', () => {
  it('one credential (the scalar-subquery form)', async () => {
    const r = await checkThenRevoke([idOf(1)], idOf(1));
    expect(r.check.live).toEqual(new Set([idOf(1)]));
    expect(r.check.now).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/);
    expect(r.whileHeld).toBe(LOCK_WAIT_TIMEOUT);
    expect(r.revokedAfterCommit).toBe(true);
  });

  it('several credentials (the join form)', async () => {
    const r = await checkThenRevoke([idOf(2), idOf(3)], idOf(3));
    expect(r.check.live).toEqual(new Set([idOf(2), idOf(3)]));
    expect(r.whileHeld).toBe(LOCK_WAIT_TIMEOUT);
    expect(r.revokedAfterCommit).toBe(true);
  });

  it('a revoked credential: not live, the clock still read (both forms)', async () => {
    await revokeCredential(db.pool, idOf(4));
    for (const ids of [[idOf(4)], [idOf(4), idOf(2)]]) {
      const [rows] = await db.pool.query<RowDataPacket[]>(...liveCredentialsWithClockSql(ids));
      const check = liveCredentialsWithClockOf(rows);
      expect(check.live.has(idOf(4))).toBe(false);
      expect(check.now).toMatch(/^\d{4}-/);
    }
  });
});
