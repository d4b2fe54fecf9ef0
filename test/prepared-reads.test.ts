// readFixedShape (db/pipeline.ts): a fixed-shape read goes prepared when nothing waits to go with
// it, and as text joined to the queued writes when something does — same rows either way, and
// never a round trip more. The claim candidate read (candidateIds) is one; lockLiveCredential, a
// transaction's first statement, goes as text with START TRANSACTION (one round trip).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { candidateIds, type CandidateSpec } from '../server/db/claim-sql.js';
import { lockLiveCredential } from '../server/db/credentials.js';
import { transactionStats, write, type Conn } from '../server/db/pipeline.js';
import { transactionOn, withTransaction } from '../server/db/pool.js';
import { createTestDb, type TestDb } from './support/db.js';
import { syncWaiting } from './support/waiting.js';

let db: TestDb;
const hex = (n: number, tag: string) => (tag + n.toString(16)).padStart(32, '0');
const NS = hex(1, 'a');
const QUEUE = hex(1, 'c');
const NOW = '2026-12-03 12:00:00.000';

beforeAll(async () => {
  db = await createTestDb();
  const tasks = Array.from({ length: 12 }, (_, i) => [hex(i, 'f'), NS, hex(1, 'b'), QUEUE, 'h', 'v1', 'v1', '{}', 'WAITING', 3, '2027-01-01', NOW, NOW, i % 3]);
  await db.pool.query(
    `INSERT INTO tasks (id, namespace_id, application_id, queue_id, handler, handler_version, payload_version, payload, state, max_attempts,
        deadline_at, created_at, updated_at, priority) VALUES ?`,
    [tasks],
  );
  await syncWaiting(db.pool);
  await db.pool.query(`INSERT INTO credentials (id, namespace_id, name, token_hash, scopes, created_at) VALUES (?, ?, 'c', ?, 'worker', ?)`, [
    hex(1, 'd'),
    NS,
    Buffer.alloc(32, 1),
    NOW,
  ]);
});
afterAll(async () => {
  await db.drop();
});

const specs = (limit: number): CandidateSpec[] => [{ queueId: QUEUE, namespaceId: NS, limit, handlers: [{ handler: 'h', versions: ['v1'] }], keyed: false }];

/** The session's prepared executions (Com_stmt_execute) so far. */
async function executes(c: Conn): Promise<number> {
  const [rows] = await c.query<RowDataPacket[]>(`SHOW SESSION STATUS LIKE 'Com_stmt_execute'`);
  return Number(rows[0]!.Value);
}

describe('readFixedShape: the claim candidate read', () => {
  it('alone: prepared, one text (one prepare) for every limit, rows in claim order', async () => {
    const conn = await db.pool.getConnection();
    try {
      const before = await executes(conn);
      const five = await candidateIds(conn, specs(5), NOW);
      const seven = await candidateIds(conn, specs(7), NOW);
      expect((await executes(conn)) - before).toBe(2);
      expect(five.map((x) => x.id)).toEqual(seven.slice(0, 5).map((x) => x.id));
      expect(seven).toHaveLength(7);
      // Claim order: priority descending, then seq.
      const order = [...seven].sort((a, b) => b.priority - a.priority || Number(a.seq - b.seq));
      expect(seven).toEqual(order);
      const [stmts] = await conn.query<RowDataPacket[]>(`SHOW SESSION STATUS LIKE 'Com_stmt_prepare'`);
      expect(Number(stmts[0]!.Value)).toBe(1);
    } finally {
      conn.release();
    }
  });

  it('after queued writes: as text in the same round trip, the writes applied first', async () => {
    const alone = await candidateIds(db.pool as unknown as Conn, specs(12), NOW);
    const out = await withTransaction(db.pool, async (tx) => {
      const [first] = await tx.query<RowDataPacket[]>('SELECT 1 AS one');
      expect(first).toHaveLength(1);
      const beforeExec = await executes(tx);
      // A write nobody reads: queued, then sent with the read (it moves the top task out of the read).
      await write(tx, `DELETE FROM waiting_tasks WHERE task_id = ?`, [alone[0]!.id]);
      const trips = transactionStats.roundTrips;
      const ids = await candidateIds(tx, specs(12), NOW);
      const tripsTaken = transactionStats.roundTrips - trips;
      const afterExec = await executes(tx);
      await tx.query('ROLLBACK');
      return { ids, tripsTaken, prepared: afterExec - beforeExec };
    });
    expect(out.tripsTaken).toBe(1);
    expect(out.prepared).toBe(0);
    expect(out.ids.map((x) => x.id)).toEqual(alone.slice(1).map((x) => x.id));
  });
});

describe('lockLiveCredential', () => {
  it('goes with START TRANSACTION in one round trip, as text', async () => {
    const conn = await db.pool.getConnection();
    try {
      const before = await executes(conn);
      const got = await transactionOn(conn, 'other', async (tx) => {
        const trips = transactionStats.roundTrips;
        const live = await lockLiveCredential(tx, hex(1, 'd'));
        return { live, trips: transactionStats.roundTrips - trips };
      });
      expect(got).toEqual({ live: true, trips: 1 });
      expect((await executes(conn)) - before).toBe(0);
    } finally {
      conn.release();
    }
  });
});
