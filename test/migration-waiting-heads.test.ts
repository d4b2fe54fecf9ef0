// Migration 000009 (waiting heads) on a database that already holds waiting rows: every row gets
// the flag rule of server/db/waiting-tasks.ts — unkeyed rows and rows with not_before flagged, and
// of each group (namespace, key, queue, handler, version) only the first row without not_before in
// claim order (priority high first, then age) — and the candidate read's index exists, COMMENTed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { listMigrations, migrateUp } from '../server/mariadb/migrations.js';
import { createTestDbBefore, type TestDb } from './support/db.js';
import { waitingHeadViolations } from './support/waiting.js';

const VERSION = 9;
const Q = 'q'.repeat(32);
const NS = 'n'.repeat(32);
let db: TestDb;

beforeAll(async () => {
  db = await createTestDbBefore(VERSION);
});
afterAll(async () => {
  await db.drop(); // checks the invariant once more (test/support/db.ts)
});

/** A waiting row as 000007/000008 wrote it (no claimable column). */
function row(seq: number, priority: number, key: string | null, version: string, notBefore: string | null) {
  return [Q, priority, seq, `task${seq}`.padEnd(32, '0'), NS, 'a'.repeat(32), 'h', version, key && Buffer.from(key), notBefore, '2999-01-01', '2026-01-01'];
}

describe('migration 000009 with waiting rows in the database', () => {
  it('flags unkeyed rows, rows with not_before and the first row of each group; adds the index', async () => {
    await db.pool.query(
      `INSERT INTO waiting_tasks (queue_id, priority, seq, task_id, namespace_id, application_id, handler, handler_version, concurrency_key,
          not_before, deadline_at, created_at) VALUES ?`,
      [
        [
          row(1, 0, 'k1', 'v1', null), // k1/v1: after seq 2 (lower priority)
          row(2, 5, 'k1', 'v1', null), // k1/v1: the group's first
          row(3, 9, 'k1', 'v1', '2026-01-01'), // not_before: always flagged, not the group's first
          row(4, 0, 'k1', 'v2', null), // k1/v2: a group of its own (a rolling deploy)
          row(5, 0, null, 'v1', null), // unkeyed
          row(6, 0, 'k2', 'v1', null), // k2/v1: first
          row(7, 0, 'k2', 'v1', null), // k2/v1: second
        ],
      ],
    );
    const applied = await migrateUp(db.pool);
    expect(applied).toEqual(
      listMigrations()
        .filter((m) => m.version >= VERSION)
        .map((m) => m.version),
    );
    const [rows] = await db.pool.query<RowDataPacket[]>('SELECT CAST(seq AS CHAR) AS seq, claimable FROM waiting_tasks ORDER BY seq');
    expect(Object.fromEntries(rows.map((r) => [r.seq, r.claimable]))).toEqual({ 1: 0, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 7: 0 });
    expect(await waitingHeadViolations(db.pool)).toEqual([]);
    const [index] = await db.pool.query<RowDataPacket[]>(
      `SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) AS cols, MAX(INDEX_COMMENT) AS comment FROM information_schema.STATISTICS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'waiting_tasks' AND INDEX_NAME = 'ix_waiting_claimable'`,
    );
    expect(index[0]).toMatchObject({ cols: 'queue_id,claimable,priority,seq' });
    expect(index[0]!.comment).toMatch(/candidate read/);
  });
});
