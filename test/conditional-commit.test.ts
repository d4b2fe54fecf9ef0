// commitIfApplied and applyChecked (server/db/conditional-commit.ts): the checked updates that decide a submit
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
import { applyChecked, checkedAssignment, commitIfApplied, isCheckRefusal, NotApplied, type CheckedUpdate } from '../server/db/conditional-commit.js';
import { transactionStats, write } from '../server/db/pipeline.js';
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
    const touch = liveQueuesTouch([tenant.queues.a!, tenant.queues.b!]);
    const r = await run([touch, unfinishedTasksReservation(tenant.application_id, 1)]);
    expect(r.err).toBeInstanceOf(NotApplied);
    // The refusal names its check: the touch, not the quota (a submit alone answers 409 from it).
    expect((r.err as NotApplied).refused(touch)).toBe(true);
    expect(await counters()).toEqual(was);
    await db.pool.query('UPDATE queues SET retired_at = NULL WHERE id = ?', [tenant.queues.b]);
  });

  it('applyChecked (a transaction that goes on): one round trip, no COMMIT; the quota refusal names the reservation', async () => {
    const was = await counters();
    const reservation = unfinishedTasksReservation(tenant.application_id, 1_000_000_000);
    let trips = 0;
    const err = await withTransaction(db.pool, async (tx) => {
      const before = transactionStats.roundTrips;
      const e = await applyChecked(tx, [liveQueuesTouch([tenant.queues.a!]), reservation]).catch((x: unknown) => x);
      trips = transactionStats.roundTrips - before;
      // The transaction is still open and usable after the refusal.
      await tx.query('SELECT 1');
      return e;
    });
    expect(trips).toBe(1);
    expect(err).toBeInstanceOf(NotApplied);
    expect((err as NotApplied).refused(reservation)).toBe(true);
    expect(await counters()).toEqual(was);
  });

  it("a queued write's own check of another column, refused in the same text, comes back as itself, not as these updates' NotApplied", async () => {
    const was = await counters();
    const err = await withTransaction(db.pool, async (tx) => {
      await write(tx, `UPDATE applications SET ${checkedAssignment('applications', 'active_attempts', 'FALSE', 'active_attempts')} WHERE id = ?`, [
        tenant.application_id,
      ]);
      return applyChecked(tx, [liveQueuesTouch([tenant.queues.a!]), unfinishedTasksReservation(tenant.application_id, 1)]).catch((x: unknown) => x);
    });
    expect(err).not.toBeInstanceOf(NotApplied);
    expect(isCheckRefusal(err)).toBe(true);
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
