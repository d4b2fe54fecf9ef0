// commitIfApplied (server/db/conditional-commit.ts): the conditional updates that decide a submit
// batch or a claim round, sent with the COMMIT in one round trip. On a real MariaDB: when every
// update matches its rows the transaction commits in that one round trip; when one does not, the
// text stops at its check — nothing of the transaction is committed (the updates before it
// included), the statements after it never run — and the caller gets NotApplied.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { unfinishedTasksReservation } from '../server/db/applications.js';
import { applicationPermits, queuePermits } from '../server/db/claim-sql.js';
import { commitIfApplied, NotApplied } from '../server/db/conditional-commit.js';
import { transactionStats } from '../server/db/pipeline.js';
import { withTransaction } from '../server/db/pool.js';
import { liveQueuesTouch } from '../server/db/queues.js';
import { createTestDb, newTenant, type TestDb } from './support/db.js';

let db: TestDb;
let tenant: CredentialsFile;

beforeAll(async () => {
  db = await createTestDb();
  tenant = await newTenant(db, { queues: ['a', 'b'] });
});
afterAll(async () => {
  await db?.drop();
});

/** The counters the updates below change. */
async function counters(): Promise<{ appActive: number; appUnfinished: number; queueA: number; queueB: number }> {
  const [[app]] = await db.pool.query<RowDataPacket[]>('SELECT active_attempts, unfinished_tasks FROM applications WHERE id = ?', [tenant.application_id]);
  const [qs] = await db.pool.query<RowDataPacket[]>('SELECT id, active_attempts FROM queues WHERE id IN (?, ?)', [tenant.queues.a, tenant.queues.b]);
  const q = new Map(qs.map((r) => [r.id as string, Number(r.active_attempts)]));
  return {
    appActive: Number(app!.active_attempts),
    appUnfinished: Number(app!.unfinished_tasks),
    queueA: q.get(tenant.queues.a!)!,
    queueB: q.get(tenant.queues.b!)!,
  };
}

/** Runs the updates as a whole transaction; its round trips and what it threw. */
async function run(updates: Parameters<typeof commitIfApplied>[1]): Promise<{ trips: number; err: unknown }> {
  const before = transactionStats.roundTrips;
  let err: unknown = null;
  await withTransaction(db.pool, (tx) => commitIfApplied(tx, updates)).catch((e: unknown) => (err = e));
  return { trips: transactionStats.roundTrips - before, err };
}

describe('commitIfApplied', () => {
  it('every update matches: committed, START, the updates and COMMIT in one round trip', async () => {
    const was = await counters();
    const r = await run([
      liveQueuesTouch([tenant.queues.a!, tenant.queues.b!]),
      queuePermits([
        [tenant.queues.b!, 2],
        [tenant.queues.a!, 1],
      ]),
      applicationPermits(tenant.application_id, 3),
      unfinishedTasksReservation(tenant.application_id, 3),
    ]);
    expect(r.err).toBeNull();
    expect(r.trips).toBe(1);
    expect(await counters()).toEqual({ appActive: was.appActive + 3, appUnfinished: was.appUnfinished + 3, queueA: was.queueA + 1, queueB: was.queueB + 2 });
  });

  it('a later update that matches no row: NotApplied, and the earlier updates are not committed', async () => {
    const was = await counters();
    const r = await run([
      queuePermits([[tenant.queues.a!, 1]]),
      // More than max_unfinished_tasks allows.
      unfinishedTasksReservation(tenant.application_id, 1_000_000_000),
    ]);
    expect(r.err).toBeInstanceOf(NotApplied);
    expect(await counters()).toEqual(was);
  });

  it('the first update not applying stops the text there: the later ones never run, nothing commits', async () => {
    const was = await counters();
    // A queue id that names no queue: the multi-row update matches one row of the two it must.
    // After it a statement that would fail otherwise (NULL into a NOT NULL column, error 1048):
    // NotApplied, not that error, shows the text stopped at the first check.
    const r = await run([
      queuePermits([
        [tenant.queues.a!, 1],
        ['no-such-queue', 1],
      ]),
      { sql: 'UPDATE applications SET unfinished_tasks = NULL WHERE id = ?', values: [tenant.application_id], rows: 1 },
    ]);
    expect(r.err).toBeInstanceOf(NotApplied);
    expect(await counters()).toEqual(was);
  });

  it('a retired queue fails the live-queue touch (a submit and a retirement never both commit)', async () => {
    await db.pool.query('UPDATE queues SET retired_at = UTC_TIMESTAMP(3) WHERE id = ?', [tenant.queues.b]);
    const was = await counters();
    const r = await run([liveQueuesTouch([tenant.queues.a!, tenant.queues.b!]), unfinishedTasksReservation(tenant.application_id, 1)]);
    expect(r.err).toBeInstanceOf(NotApplied);
    expect(await counters()).toEqual(was);
  });

  it('a statement after a check that passes does run: its own error comes back as itself', async () => {
    const was = await counters();
    const r = await run([
      applicationPermits(tenant.application_id, 1),
      { sql: 'UPDATE applications SET unfinished_tasks = NULL WHERE id = ?', values: [tenant.application_id], rows: 1 },
    ]);
    expect(r.err).not.toBeInstanceOf(NotApplied);
    expect((r.err as { errno?: number }).errno).toBe(1048);
    expect(await counters()).toEqual(was);
  });
});
