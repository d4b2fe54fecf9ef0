// How MariaDB runs statements of the dispatch path that the bench's profile of mariadbd found
// reading far more rows than they change (docs/benchmarks.md, "Where mariadbd's CPU goes"). Each
// is checked twice: its EXPLAIN, and the rows the handler actually read when it ran (session
// Handler_read_* counters), on a table holding many more rows than the statement touches.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import { leaveWaitingSql, type WaitingKey } from '../server/db/waiting-tasks.js';
import { lockKeySuccessorsSql } from '../server/db/claim-sql.js';
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
  it('one row (a hand-off, a lone refill): read by its key, no scan of the table', async () => {
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

describe("a key hand-off's successors read: each successor's key row joined by its primary key", () => {
  it('the task and the key row are eq_ref reads of their primary keys, the waiting rows a read of ix_waiting_key', async () => {
    const ns = 'm'.repeat(32);
    const queue = 'q'.repeat(31) + '3';
    const key = (k: number) => Buffer.from(`key-${k}`);
    const id = (n: number) => `k${String(n).padStart(31, '0')}`;
    const tasks = Array.from({ length: 200 }, (_, i) => [
      id(i),
      ns,
      'a'.repeat(32),
      queue,
      'h',
      'v1',
      'v1',
      '{}',
      'WAITING',
      3,
      key(i % 10),
      '2999-01-01',
      '2026-01-01',
      '2026-01-01',
    ]);
    await db.pool.query(
      `INSERT INTO tasks (id, namespace_id, application_id, queue_id, handler, handler_version, payload_version, payload, state, max_attempts,
          concurrency_key, deadline_at, created_at, updated_at) VALUES ?`,
      [tasks],
    );
    await db.pool.query(
      `INSERT INTO waiting_tasks (queue_id, priority, seq, task_id, namespace_id, application_id, handler, handler_version, concurrency_key,
          not_before, deadline_at, created_at)
       SELECT queue_id, priority, seq, id, namespace_id, application_id, handler, handler_version, concurrency_key, not_before, deadline_at, created_at
         FROM tasks WHERE namespace_id = ?`,
      [ns],
    );
    await db.pool.query(
      'INSERT INTO resource_keys (namespace_id, concurrency_key, highest_token, holder_attempt_id, version, created_at, updated_at) VALUES ?',
      [Array.from({ length: 10 }, (_, k) => [ns, key(k), 5, 'x'.repeat(32), 5, '2026-01-01', '2026-01-01'])],
    );
    await db.pool.query('ANALYZE TABLE tasks, waiting_tasks, resource_keys');
    const [sql, values] = lockKeySuccessorsSql([{ namespaceId: ns, key: key(3), queueId: queue }], '2026-12-03 10:00:00.000');
    const [plan] = await db.pool.query<RowDataPacket[]>(`EXPLAIN ${sql}`, values);
    const of = (table: string) => plan.find((r) => r.table === table);
    expect(of('t')).toMatchObject({ type: 'eq_ref', key: 'PRIMARY' });
    expect(of('r')).toMatchObject({ type: 'eq_ref', key: 'PRIMARY' });
    expect(of('w')).toMatchObject({ key: 'ix_waiting_key' });
    const [rows] = await db.pool.query<RowDataPacket[]>(sql, values);
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatchObject({ key_holder_attempt_id: 'x'.repeat(32), key_highest_token: '5' });
  });
});
