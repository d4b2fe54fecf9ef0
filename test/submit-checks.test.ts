// The hot-row checks of task creation (server/dispatch/submit.ts), one form everywhere: the
// checked updates of db/conditional-commit.ts — liveQueuesTouch (a retired queue) and
// unfinishedTasksReservation (the application's quota). A batch and an item alone send them with
// their COMMIT; a caller's transaction (schedules, workflows) in one round trip without it. At a
// batch's edge each item runs alone, where the refusal is its exact answer (409 RESOURCE_RETIRED,
// 429 QUOTA_EXCEEDED with the limit), told apart by the refused check's column without a read.
// The real TaskSubmitter on a real MariaDB; a retirement between an item's read and its checks is
// made by a statement hook on the pool (bench/pool-tap.ts): it sends the
// retirement right before the queue touch, in the same transaction, which a concurrent retirement
// committed at that moment looks like to the touch (it reads the row's latest version), with no
// timing involved; the transaction rolls it back with itself.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { pino } from 'pino';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { hashToken } from '../server/admin/access.js';
import { findCredentialByTokenHash, type Credential } from '../server/db/credentials.js';
import { transactionStats } from '../server/db/pipeline.js';
import { PoolTap } from '../bench/pool-tap.js';
import { withTransaction } from '../server/db/pool.js';
import { createTasksInTransaction, TaskSubmitter, type SubmitCommand, type SubmitOutcome } from '../server/dispatch/submit.js';
import { normalizeSubmit } from '../server/dispatch/submit-input.js';
import { ikey } from './support/http.js';
import { createMetrics } from '../server/metrics.js';
import { NodeSignals } from '../server/work-signals.js';
import { createTestDb, newTenant, type TestDb } from './support/db.js';

let db: TestDb;
let submitter: TaskSubmitter;
const app = { metrics: createMetrics(), log: pino({ level: 'silent' }), signals: new NodeSignals() };

/** On the file's pool: records the statements, sends the retirement. */
const tap = new PoolTap();

beforeAll(async () => {
  db = await createTestDb();
  tap.attach(db.pool);
  submitter = new TaskSubmitter({ pool: db.pool, ...app });
});
afterEach(() => tap.setHook(null));
afterAll(async () => db?.drop());

const TOUCH = 'UPDATE queues SET revision = IF';
const RESERVE = 'UPDATE applications SET unfinished_tasks = IF';

/** A fresh tenant (its own application and quota counter) and its credential. */
async function tenant(): Promise<{ t: CredentialsFile; cred: Credential }> {
  const t = await newTenant(db, { queues: ['a', 'b'] });
  return { t, cred: (await findCredentialByTokenHash(db.pool, hashToken(t.token)))! };
}

function command(cred: Credential, queueId: string, key: string | null = ikey('chk')): SubmitCommand {
  return { credential: cred, key, prepared: normalizeSubmit({ queue_id: queueId, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: {} }) };
}

/** Records the head of every statement the pipeline sends; `retire` (a queue id): its retirement is
 * sent right before each queue touch. */
function recordStatements(retire?: string): string[] {
  const seen: string[] = [];
  tap.setHook((s) => {
    seen.push(s.trim());
    return retire && s.startsWith(TOUCH) ? `UPDATE queues SET retired_at = UTC_TIMESTAMP(3) WHERE id = '${retire}'` : null;
  });
  return seen;
}

const count = (seen: string[], head: string) => seen.filter((s) => s.startsWith(head)).length;

async function stored(t: CredentialsFile): Promise<{ tasks: number; unfinished: number; retired: number }> {
  const [[row]] = await db.pool.query<RowDataPacket[]>(
    `SELECT (SELECT COUNT(*) FROM tasks WHERE application_id = ?) AS tasks, (SELECT unfinished_tasks FROM applications WHERE id = ?) AS unfinished,
            (SELECT COUNT(*) FROM queues WHERE namespace_id = ? AND retired_at IS NOT NULL) AS retired`,
    [t.application_id, t.application_id, t.namespace_id],
  );
  return { tasks: Number(row!.tasks), unfinished: Number(row!.unfinished), retired: Number(row!.retired) };
}

const codes = (outs: SubmitOutcome[]) => outs.map((o) => (o.ok ? o.status : `${o.error.code}`));

describe('the submitter: a batch and an item alone', () => {
  it('a batch is two round trips: its reads (queues, clock, receipts), then its inserts with both checks and the COMMIT', async () => {
    const { t, cred } = await tenant();
    const seen = recordStatements();
    const before = transactionStats.roundTrips;
    const outs = await Promise.all(submitter.submitMany([command(cred, t.queues.a!), command(cred, t.queues.b!), command(cred, t.queues.a!)]));
    expect(codes(outs)).toEqual([201, 201, 201]);
    expect(transactionStats.roundTrips - before).toBe(2);
    expect(seen.map((s) => s.split(/\s+/).slice(0, 3).join(' '))).toEqual([
      'START TRANSACTION /*',
      "SELECT 'q' AS",
      'SELECT namespace_id, idempotency_key,',
      'INSERT INTO tasks',
      'INSERT INTO waiting_tasks',
      'INSERT INTO receipts',
      'UPDATE queues SET',
      'UPDATE applications SET',
      'COMMIT',
    ]);
    expect(await stored(t)).toEqual({ tasks: 3, unfinished: 3, retired: 0 });
  });

  it("a full quota at a batch's edge: each item alone sends its checks with its COMMIT; in arrival order the first fits, the others get 429 with the limit", async () => {
    const { t, cred } = await tenant();
    await db.pool.query('UPDATE applications SET max_unfinished_tasks = 1 WHERE id = ?', [t.application_id]);
    const seen = recordStatements();
    const outs = await Promise.all(submitter.submitMany([command(cred, t.queues.a!), command(cred, t.queues.a!), command(cred, t.queues.b!)]));
    expect(codes(outs)).toEqual([201, 'QUOTA_EXCEEDED', 'QUOTA_EXCEEDED']);
    for (const o of outs.slice(1)) {
      if (o.ok) throw new Error('expected a refusal');
      expect(o.error.details).toEqual({ quota: 'max_unfinished_tasks', limit: 1 });
    }
    // The batch, then three items alone: every text carries both checks and its COMMIT (the
    // refused ones stop before it); the limit is read by the two 429s only.
    expect([count(seen, TOUCH), count(seen, RESERVE), count(seen, 'COMMIT')]).toEqual([4, 4, 4]);
    expect(count(seen, 'SELECT max_unfinished_tasks')).toBe(2);
    expect(await stored(t)).toEqual({ tasks: 1, unfinished: 1, retired: 0 });
  });

  it("a queue retired between an item's read and its checks, alone: 409 RESOURCE_RETIRED, told by the refusal without a read, nothing stored", async () => {
    const { t, cred } = await tenant();
    const seen = recordStatements(t.queues.a!);
    const outs = await Promise.all(submitter.submitMany([command(cred, t.queues.a!), command(cred, t.queues.a!)]));
    expect(codes(outs)).toEqual(['RESOURCE_RETIRED', 'RESOURCE_RETIRED']);
    for (const o of outs) if (!o.ok) expect(o.error.details).toEqual({ field: 'queue_id' });
    // The batch and each item alone stop at the touch: the quota is never tried, nothing is read.
    expect([count(seen, TOUCH), count(seen, RESERVE), count(seen, 'SELECT max_unfinished_tasks')]).toEqual([3, 3, 0]);
    expect(await stored(t)).toEqual({ tasks: 0, unfinished: 0, retired: 0 });
  });

  it('an item whose queue is retired when read is refused there, and its neighbour in the batch is accepted', async () => {
    const { t, cred } = await tenant();
    await db.pool.query('UPDATE queues SET retired_at = UTC_TIMESTAMP(3) WHERE id = ?', [t.queues.b]);
    const outs = await Promise.all(submitter.submitMany([command(cred, t.queues.b!), command(cred, t.queues.a!)]));
    expect(codes(outs)).toEqual(['RESOURCE_RETIRED', 201]);
    expect(await stored(t)).toEqual({ tasks: 1, unfinished: 1, retired: 1 });
  });
});

describe("a caller's transaction (schedule fires, workflow steps)", () => {
  /** createTasksInTransaction inside a transaction of ours, under a savepoint rolled back on a
   * refusal (as schedules/fire.ts does); then a read in the same transaction (it goes on).
   * `retire`: recordStatements' retirement before the queue touch. */
  async function create(items: SubmitCommand[], retire?: string): Promise<{ codes: (number | string)[]; trips: number; seen: string[]; after: number }> {
    return withTransaction(db.pool, async (c) => {
      await c.query('SAVEPOINT caller');
      const seen = recordStatements(retire);
      const before = transactionStats.roundTrips;
      let out: (number | string)[];
      try {
        out = codes((await createTasksInTransaction(app, c, items)).outcomes);
      } catch (err) {
        out = [(err as { code: string }).code];
        await c.query('ROLLBACK TO SAVEPOINT caller');
      }
      const trips = transactionStats.roundTrips - before;
      tap.setHook(null);
      const [[one]] = await c.query<RowDataPacket[]>('SELECT 1 AS one');
      return { codes: out, trips, seen, after: Number(one!.one) };
    });
  }

  it('both checks in one round trip with the inserts, no COMMIT: the caller commits', async () => {
    const { t, cred } = await tenant();
    const r = await create([command(cred, t.queues.a!, null), command(cred, t.queues.b!, null)]);
    expect(r.codes).toEqual([201, 201]);
    expect(r.trips).toBe(2);
    expect([count(r.seen, TOUCH), count(r.seen, RESERVE), count(r.seen, 'COMMIT')]).toEqual([1, 1, 0]);
    expect(await stored(t)).toEqual({ tasks: 2, unfinished: 2, retired: 0 });
  });

  it('a full quota: QUOTA_EXCEEDED for the batch, the transaction goes on, nothing of the tasks stays', async () => {
    const { t, cred } = await tenant();
    await db.pool.query('UPDATE applications SET max_unfinished_tasks = 1 WHERE id = ?', [t.application_id]);
    const r = await create([command(cred, t.queues.a!, null), command(cred, t.queues.a!, null)]);
    expect(r).toMatchObject({ codes: ['QUOTA_EXCEEDED'], after: 1 });
    expect(count(r.seen, 'SELECT max_unfinished_tasks')).toBe(1);
    expect(await stored(t)).toEqual({ tasks: 0, unfinished: 0, retired: 0 });
  });

  it('a queue retired before the checks: RESOURCE_RETIRED for the batch, the transaction goes on, nothing of the tasks stays', async () => {
    const { t, cred } = await tenant();
    const r = await create([command(cred, t.queues.a!, null), command(cred, t.queues.b!, null)], t.queues.b!);
    expect(r).toMatchObject({ codes: ['RESOURCE_RETIRED'], after: 1 });
    expect(await stored(t)).toEqual({ tasks: 0, unfinished: 0, retired: 0 });
  });
});
