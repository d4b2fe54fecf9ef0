// closeAttempts' UPDATE (a CASE per column, for one row too) on a table of many more attempts than
// it closes: its plan (attempts by primary key), the rows the handler read to run it (session
// Handler_* counters), and the values it wrote — NULLs, a 100 KB output, quotes and Unicode included.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import { closeAttemptsSql, type ClosedAttempt } from '../server/db/attempt-batches.js';
import { createTestDb, type TestDb } from './support/db.js';

let db: TestDb;
const ROWS = 600;
const NOW = '2026-12-03 09:00:00.123';
const idOf = (n: number) => n.toString(16).padStart(32, '0');

beforeAll(async () => {
  db = await createTestDb();
  const rows = Array.from({ length: ROWS }, (_, i) => {
    const n = i + 1;
    // Every 7th attempt was never started (started_at NULL: the update sets it to now).
    const started = n % 7 === 0 ? null : '2026-12-03 08:59:00.000';
    return [
      idOf(n),
      idOf(n + 10_000),
      'n'.repeat(32),
      'p'.repeat(32),
      'q'.repeat(32),
      1,
      'RUNNING',
      'w',
      's'.repeat(32),
      '2026-12-03 08:58:00',
      started,
      '2026-12-03 09:05:00',
    ];
  });
  await db.pool.query(
    `INSERT INTO attempts (id, task_id, namespace_id, application_id, queue_id, attempt_no, state, worker_id, session_id, leased_at, started_at, lease_expires_at) VALUES ?`,
    [rows],
  );
  await db.pool.query('ANALYZE TABLE attempts');
});
afterAll(async () => {
  await db.drop();
});

const closed = (n: number, over: Partial<ClosedAttempt> = {}): ClosedAttempt => ({
  id: idOf(n),
  state: 'SUCCEEDED',
  outcome: 'succeeded',
  output: `{"n":${n}}`,
  errorCode: null,
  errorMessage: null,
  fingerprint: n.toString(16).padStart(64, 'f'),
  reply: JSON.stringify({ type: 'result.ok', attempt_id: idOf(n), deduplicated: false, task_state: 'SUCCEEDED' }),
  started: true,
  ...over,
});

async function counters(c: PoolConnection): Promise<Map<string, number>> {
  const [rows] = await c.query<RowDataPacket[]>("SHOW SESSION STATUS LIKE 'Handler\\_%'");
  return new Map(rows.map((r) => [r.Variable_name as string, Number(r.Value)]));
}

/** EXPLAIN, then the statement in a transaction rolled back: the plan, the rows it changed, the
 * handler counters' deltas and the attempts' rows as written. */
async function run(rows: ClosedAttempt[]) {
  const [sql, values] = closeAttemptsSql(rows, NOW);
  const c = await db.pool.getConnection();
  try {
    const [plan] = await c.query<RowDataPacket[]>(`EXPLAIN ${sql}`, values);
    await c.query('START TRANSACTION');
    const before = await counters(c);
    const [res] = await c.query(sql, values);
    const after = await counters(c);
    const [written] = await c.query<RowDataPacket[]>(
      `SELECT id, state, outcome, output, error_code, error_message, result_fingerprint, result_reply,
              DATE_FORMAT(finished_at, '%Y-%m-%d %H:%i:%s.%f') AS finished_at, DATE_FORMAT(started_at, '%Y-%m-%d %H:%i:%s.%f') AS started_at
         FROM attempts WHERE id IN (?) ORDER BY id`,
      [rows.map((r) => r.id)],
    );
    await c.query('ROLLBACK');
    const delta = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
    const attemptsStep = plan.find((p) => p.table === 'attempts')!;
    return {
      attempts: { type: attemptsStep.type as string, key: attemptsStep.key as string | null },
      changed: (res as { affectedRows: number }).affectedRows,
      byKey: delta('Handler_read_key') + delta('Handler_read_next'),
      scanned: delta('Handler_read_rnd_next'),
      updated: delta('Handler_update'),
      written,
    };
  } finally {
    c.release();
  }
}

const expected = (r: ClosedAttempt, started: string) => ({
  id: r.id,
  state: r.state,
  outcome: r.outcome,
  output: r.output,
  error_code: r.errorCode,
  error_message: r.errorMessage,
  result_fingerprint: r.fingerprint,
  result_reply: r.reply,
  finished_at: `${NOW}000`,
  started_at: started,
});

describe('closeAttempts: one UPDATE, each attempt found by its primary key', () => {
  it('several rows (the CASE form): a range read of PRIMARY, no scan, every value as given', async () => {
    const big = `{"text":"${'x'.repeat(100_000)} it's \\"quoted\\" — ünïcødé ✓"}`;
    const rows = [
      closed(14, { state: 'FAILED', outcome: 'failed', output: null }),
      closed(301, { output: big }),
      closed(7, { state: 'RETRY', outcome: 'failed', output: null, errorCode: 'E_TIMEOUT', errorMessage: "it's 'late' — ✓" }),
      closed(599),
    ];
    const r = await run(rows);
    expect(r.attempts).toEqual({ type: 'range', key: 'PRIMARY' });
    expect(r.changed).toBe(rows.length);
    expect(r.updated).toBe(rows.length);
    expect(r.byKey).toBeLessThanOrEqual(2 * rows.length);
    expect(r.scanned).toBe(0);
    const started = (n: number) => (n % 7 === 0 ? `${NOW}000` : '2026-12-03 08:59:00.000000');
    const byId = new Map(rows.map((x, i) => [x.id, expected(x, started([14, 301, 7, 599][i]!))]));
    expect(r.written).toEqual([...byId.keys()].sort().map((id) => byId.get(id)));
  });

  it('one row (a lone result): by primary key, no scan, every value as given', async () => {
    const row = closed(42, { state: 'FAILED', outcome: 'failed', output: null, errorCode: 'E', errorMessage: "it's ✓" });
    const r = await run([row]);
    expect(['range', 'const', 'eq_ref']).toContain(r.attempts.type);
    expect(r.attempts.key).toBe('PRIMARY');
    expect(r.changed).toBe(1);
    expect(r.byKey).toBeLessThanOrEqual(1);
    expect(r.scanned).toBe(0);
    expect(r.written).toEqual([expected(row, `${NOW}000`)]);
  });
});
