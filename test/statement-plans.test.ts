// How MariaDB runs statements of the dispatch path that the bench's profile of mariadbd found
// reading far more rows than they change (docs/benchmarks.md, "Where mariadbd's CPU goes"). Each
// is checked twice: its EXPLAIN, and the rows the handler actually read when it ran (session
// Handler_read_* counters), on a table holding many more rows than the statement touches.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import { flagHeadsSql, leaveWaitingSql, type WaitingKey } from '../server/db/waiting-tasks.js';
import { candidateReadSql } from '../server/db/claim-sql.js';
import { createTestDb, type TestDb } from './support/db.js';

let db: TestDb;
const QUEUES = ['q'.repeat(31) + '1', 'q'.repeat(31) + '2'];
const ROWS = 600;

/** The waiting row of seq `n` (queues alternate, priorities 0–2). */
const keyOf = (n: number): WaitingKey => ({ queue_id: QUEUES[n % 2]!, priority: n % 3, seq: String(n) });

beforeAll(async () => {
  db = await createTestDb();
  const rows = Array.from({ length: ROWS }, (_, i) => keyOf(i + 1));
  await db.pool.query(
    `INSERT INTO waiting_tasks (queue_id, priority, seq, task_id, namespace_id, application_id, handler, handler_version, concurrency_key,
        not_before, deadline_at, created_at) VALUES ?`,
    [
      rows.map((r) => [
        r.queue_id,
        r.priority,
        r.seq,
        `t${r.seq}`.padEnd(32, '0'),
        'n'.repeat(32),
        'a'.repeat(32),
        'h',
        'v1',
        null,
        null,
        '2999-01-01',
        '2026-01-01',
      ]),
    ],
  );
  await db.pool.query('ANALYZE TABLE waiting_tasks');
});
afterAll(async () => {
  await db.drop();
});

async function handlerReads(c: PoolConnection): Promise<Map<string, number>> {
  const [rows] = await c.query<RowDataPacket[]>("SHOW SESSION STATUS LIKE 'Handler\\_read\\_%'");
  return new Map(rows.map((r) => [r.Variable_name as string, Number(r.Value)]));
}

/** EXPLAIN of `sql`, then the statement itself in a transaction rolled back: the plan's access
 * type and key, the rows it deleted, and the rows read by scanning (rnd_next) and by key. */
async function runDelete(sql: string, values: unknown[]) {
  const c = await db.pool.getConnection();
  try {
    const [plan] = await c.query<RowDataPacket[]>(`EXPLAIN ${sql}`, values);
    await c.query('START TRANSACTION');
    const before = await handlerReads(c);
    const [res] = await c.query(sql, values);
    const after = await handlerReads(c);
    await c.query('ROLLBACK');
    const delta = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
    return {
      type: plan[0]!.type as string,
      key: plan[0]!.key as string | null,
      deleted: (res as { affectedRows: number }).affectedRows,
      scanned: delta('Handler_read_rnd_next'),
      byKey: delta('Handler_read_key') + delta('Handler_read_next'),
    };
  } finally {
    c.release();
  }
}

describe('leaveWaiting: a task leaving WAITING deletes its waiting row by primary key', () => {
  it('one row (a claim of one task, a cancel): read by its key, no scan of the table', async () => {
    const r = await runDelete(...leaveWaitingSql([keyOf(301)]));
    expect(r).toMatchObject({ key: 'PRIMARY', deleted: 1, scanned: 0 });
    expect(['const', 'range', 'eq_ref']).toContain(r.type);
    expect(r.byKey).toBeLessThanOrEqual(2);
  });

  it('several rows of two queues (a claim round): a range read of the primary key', async () => {
    const keys = [keyOf(2), keyOf(3), keyOf(598), keyOf(599)];
    const r = await runDelete(...leaveWaitingSql(keys));
    expect(r).toMatchObject({ type: 'range', key: 'PRIMARY', deleted: 4, scanned: 0 });
    expect(r.byKey).toBeLessThanOrEqual(2 * keys.length);
  });

  it('the form it replaced, a one-element row list, scans the whole table on this server (why one row is spelled out)', async () => {
    const k = keyOf(301);
    const r = await runDelete('DELETE FROM waiting_tasks WHERE (queue_id, priority, seq) IN ((?, ?, ?))', [k.queue_id, k.priority, k.seq]);
    // If a server version plans this by key, the special case in leaveWaitingSql may go.
    expect(r).toMatchObject({ type: 'ALL', deleted: 1 });
    expect(r.scanned).toBeGreaterThanOrEqual(ROWS);
  });
});

describe('candidateIds: the claim read scans the claimable rows (migration 000009), not the backlog of busy keys', () => {
  const NS = 'm'.repeat(32);
  const KEYS = Array.from({ length: 10 }, (_, i) => Buffer.from(`hot/${i}`));

  /** `n` waiting rows of queue `queueId` on the 10 keys (round robin), flagged as the writers flag
   * them: the first row of each key's group. */
  async function backlog(queueId: string, n: number): Promise<void> {
    const rows = Array.from({ length: n }, (_, i) => [
      queueId,
      0,
      String(100_000 + i),
      `${queueId.slice(0, 8)}${String(i).padStart(24, '0')}`,
      NS,
      'a'.repeat(32),
      'h',
      'v1',
      KEYS[i % 10],
      null,
      '2999-01-01',
      '2026-01-01',
      i < 10 ? 1 : 0,
    ]);
    await db.pool.query(
      `INSERT INTO waiting_tasks (queue_id, priority, seq, task_id, namespace_id, application_id, handler, handler_version, concurrency_key,
          not_before, deadline_at, created_at, claimable) VALUES ?`,
      [rows],
    );
  }

  /** The read of one queue with `limit: 10`, keyed (as a claim of a keyed session): its plan, the
   * rows found, and the session's Handler_read_key / _next deltas. */
  async function read(queueId: string, index: string, flag: string) {
    const [sql, args] = candidateReadSql({ queueId, namespaceId: NS, limit: 10, handlers: null, keyed: true }, '2026-06-01 00:00:00.000', 0, index, flag);
    const c = await db.pool.getConnection();
    try {
      const [plan] = await c.query<RowDataPacket[]>(`EXPLAIN ${sql.slice(1, -1)}`, args);
      const before = await handlerReads(c);
      const [rows] = await c.query<RowDataPacket[]>(sql, args);
      const after = await handlerReads(c);
      const delta = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
      return {
        key: plan[0]!.key as string,
        extra: String(plan[0]!.Extra),
        found: rows.length,
        readKey: delta('Handler_read_key'),
        readNext: delta('Handler_read_next'),
      };
    } finally {
      c.release();
    }
  }

  it('reads the same rows at 300, 1 000 and 3 000 waiting rows on 10 held keys; the scan of every row reads them all', async () => {
    await db.pool.query(
      `INSERT INTO resource_keys (namespace_id, concurrency_key, highest_token, holder_attempt_id, version, created_at, updated_at) VALUES ?`,
      [KEYS.map((k, i) => [NS, k, 1, `holder${i}`.padEnd(32, '0'), 1, '2026-01-01', '2026-01-01'])],
    );
    const flagged = [];
    for (const n of [300, 1000, 3000]) {
      const queueId = `hot${n}`.padEnd(32, 'x');
      await backlog(queueId, n);
      await db.pool.query('ANALYZE TABLE waiting_tasks');
      const r = await read(queueId, 'ix_waiting_claimable', 'AND w.claimable = 1 ');
      expect(r).toMatchObject({ key: 'ix_waiting_claimable', found: 0 });
      expect(r.extra).not.toContain('filesort');
      flagged.push({ readKey: r.readKey, readNext: r.readNext });
      // The statement before 000009 (every row, by the primary key) on the same rows: grows with n.
      const all = await read(queueId, 'PRIMARY', '');
      expect(all.found).toBe(0);
      expect(all.readNext).toBeGreaterThanOrEqual(n);
    }
    // The next head after a claim of 3 keys (flagHeadsSql): one dive of the key's index per group,
    // whatever the backlog (the primary key's walk read the rows of other keys, and locked them).
    const [sql, args] = flagHeadsSql(
      KEYS.slice(0, 3).map((k) => ({
        queue_id: 'hot3000'.padEnd(32, 'x'),
        priority: 0,
        seq: '1',
        namespace_id: NS,
        concurrency_key: k,
        handler: 'h',
        handler_version: 'v1',
      })),
    )!;
    const c = await db.pool.getConnection();
    try {
      const [plan] = await c.query<RowDataPacket[]>(`EXPLAIN ${sql}`, args);
      expect(plan.filter((p) => p.table === 'waiting_tasks').map((p) => p.key)).toEqual(['ix_waiting_key', 'ix_waiting_key', 'ix_waiting_key']);
      await c.query('START TRANSACTION');
      const before = await handlerReads(c);
      await c.query(sql, args);
      const after = await handlerReads(c);
      await c.query('ROLLBACK');
      const reads = ['Handler_read_key', 'Handler_read_next', 'Handler_read_rnd_next'].reduce((n, k) => n + (after.get(k) ?? 0) - (before.get(k) ?? 0), 0);
      expect(reads).toBeLessThanOrEqual(20);
    } finally {
      c.release();
    }
    // Flat: the 10 flagged heads and their 10 key probes, whatever the backlog.
    expect(flagged[1]).toEqual(flagged[0]);
    expect(flagged[2]).toEqual(flagged[0]);
    expect(flagged[0]!.readKey + flagged[0]!.readNext).toBeLessThanOrEqual(40);
  });
});
