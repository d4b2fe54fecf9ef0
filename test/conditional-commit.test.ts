// commitIfApplied (server/db/conditional-commit.ts): the checked updates that decide a submit
// batch or a claim round, sent with the COMMIT in one round trip. On a real MariaDB: when every
// check passes the transaction commits in that one round trip; when one fails (a row of its
// UPDATE whose condition does not hold is set to NULL, refused by the NOT NULL column), the text
// stops at that statement — nothing of the transaction is committed (the updates before it
// included), the statements after it never run — and the caller gets NotApplied.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { unfinishedTasksReservation } from '../server/db/applications.js';
import { applicationPermits, queuePermits } from '../server/db/claim-sql.js';
import { commitIfApplied, NotApplied, type CheckedUpdate } from '../server/db/conditional-commit.js';
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

  // A statement that fails with a 1048 that is no check's (NULL into a NOT NULL column that no
  // check names): placed after a check, it shows whether the text ran on past it.
  const notACheck = (): CheckedUpdate => ({ sql: 'UPDATE applications SET max_unfinished_tasks = NULL WHERE id = ?', values: [tenant.application_id] });

  it('the first check failing stops the text there: the later statements never run, nothing commits', async () => {
    const was = await counters();
    // Queue a can grant its permit, queue b cannot (over its limit): the row of b alone fails the
    // multi-row update. NotApplied, not the later statement's error, shows the text stopped there.
    const r = await run([
      queuePermits([
        [tenant.queues.a!, 1],
        [tenant.queues.b!, 1_000_000_000],
      ]),
      notACheck(),
    ]);
    expect(r.err).toBeInstanceOf(NotApplied);
    expect(await counters()).toEqual(was);
  });

  it('a paused queue refuses its permits (each row checked in the SET)', async () => {
    await db.pool.query('UPDATE queues SET paused = 1 WHERE id = ?', [tenant.queues.b]);
    const was = await counters();
    const r = await run([
      queuePermits([
        [tenant.queues.a!, 1],
        [tenant.queues.b!, 1],
      ]),
    ]);
    await db.pool.query('UPDATE queues SET paused = 0 WHERE id = ?', [tenant.queues.b]);
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

  it('a statement after a check that passes does run: its own error (another 1048) comes back as itself', async () => {
    const was = await counters();
    const r = await run([applicationPermits(tenant.application_id, 1), notACheck()]);
    expect(r.err).not.toBeInstanceOf(NotApplied);
    expect((r.err as { errno?: number }).errno).toBe(1048);
    expect(await counters()).toEqual(was);
  });
});
