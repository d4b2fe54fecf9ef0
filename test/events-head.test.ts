// The result stream's head (docs/design.md "HTTP commands and the result stream"): a committed event above stream_heads.last_sequence
// made every later allocation of its namespace collide with it forever (Duplicate entry '<ns>-846').
// Against the real MariaDB, an append of events for two namespaces (the outcome transactions' shape:
// START TRANSACTION, head and events of each namespace, COMMIT, pipelined as one text) is aborted
// before each of its statements in turn — by a real server error (SIGNAL 1213, retried by
// transactionOn), by a ROLLBACK the rest of the text runs after (what a rollback between two
// statements of one text amounts to: the bump undone, the insert still run), and by the connection
// killed at that point — and after each: last_sequence = max(sequence) per namespace, no event lost or
// doubled, and the next append succeeds.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { createTestDb, type TestDb } from './support/db.js';
import { withTransaction } from '../server/db/pool.js';
import { PoolTap } from '../bench/pool-tap.js';
import { appendResultEvents } from '../server/dispatch/ledger.js';
import { newId } from '../server/ids.js';

let db: TestDb;
/** On the file's pool: the aborts and the recording pass. */
const tap = new PoolTap();
beforeAll(async () => {
  db = await createTestDb();
  tap.attach(db.pool);
});
afterEach(() => tap.setHook(null));
afterAll(async () => db?.drop());

const NS = [newId(), newId()];
const QUEUE = newId();

/** Two events in each namespace, in one transaction (the ledger's shape). */
async function append(): Promise<void> {
  await withTransaction(db.pool, (c) =>
    appendResultEvents(
      c,
      NS.flatMap((ns) =>
        [0, 1].map(() => ({ namespaceId: ns, type: 'task.succeeded' as const, taskId: newId(), queueId: QUEUE, result: { outcome: 'succeeded' } })),
      ),
    ),
  );
}

/** Per namespace: head, max(sequence), count. */
async function heads(): Promise<{ head: string; max: string; n: number }[]> {
  const out = [];
  for (const ns of NS) {
    const [[h]] = await db.pool.query<RowDataPacket[]>('SELECT last_sequence FROM stream_heads WHERE namespace_id = ?', [ns]);
    const [[e]] = await db.pool.query<RowDataPacket[]>('SELECT MAX(sequence) AS max, COUNT(*) AS n FROM result_events WHERE namespace_id = ?', [ns]);
    out.push({ head: String(h?.last_sequence ?? 0), max: String(e!.max ?? 0), n: Number(e!.n) });
  }
  return out;
}

/** The statements of one append, as the pipeline sends them (a recording pass with no fault). */
async function statementsOfAppend(): Promise<string[]> {
  const seen: string[] = [];
  tap.setHook((s) => (seen.push(s.split(/\s+/).slice(0, 3).join(' ')), null));
  await append();
  tap.setHook(null);
  return seen;
}

/** Arms `fault` before the statement at `position` of the next transaction (once). */
function armAt(position: number, fault: (threadId: number) => string): void {
  let i = 0;
  tap.setHook((_s, threadId) => (i++ === position ? fault(threadId) : null));
}

async function expectConsistent(events: number): Promise<void> {
  for (const h of await heads()) {
    expect(h.max).toBe(h.head);
    expect(h.n).toBe(events);
    expect(BigInt(h.head)).toBe(BigInt(events)); // no sequence skipped, none doubled
  }
}

describe('stream head allocation under aborts', () => {
  it('an abort before any statement or at COMMIT leaves head = max(sequence), and the next append succeeds', async () => {
    let events = 0;
    const statements = await statementsOfAppend();
    events += 2;
    expect(statements.length).toBeGreaterThanOrEqual(6); // START, 2 × (head, events), COMMIT
    for (let at = 0; at < statements.length; at++) {
      // A real deadlock error there: transactionOn rolls back and runs the append again.
      armAt(at, () => "SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = 'injected deadlock'");
      await append();
      events += 2;
      await expectConsistent(events);
      // The bump undone by a ROLLBACK, the rest of the text still run (outside a transaction).
      armAt(at, () => 'ROLLBACK');
      await append().catch(() => {}); // a duplicate key, or nothing: never an event above the head
      const after = await heads();
      for (const h of after) expect(BigInt(h.max) <= BigInt(h.head)).toBe(true);
      await db.pool.query('DELETE FROM result_events WHERE namespace_id IN (?) AND sequence > ?', [NS, events]); // statements run after the ROLLBACK committed alone
      await db.pool.query('UPDATE stream_heads SET last_sequence = ? WHERE namespace_id IN (?)', [events, NS]);
      // The connection killed there: the transaction is gone, its outcome reported, not retried.
      armAt(at, (threadId) => `KILL CONNECTION ${threadId}`);
      await expect(append()).rejects.toThrow();
      await expectConsistent(events);
      await append(); // the stream goes on
      events += 2;
      await expectConsistent(events);
    }
  });
});
