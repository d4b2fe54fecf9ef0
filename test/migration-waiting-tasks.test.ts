// Migration 000007 (waiting_tasks) on a database that already holds tasks: the WAITING ones get
// their claimable rows and are dispatched after the upgrade in claim order (priority, then age; a
// keyed one too; one not yet due only once due), the NEEDS_REVIEW one is counted by the new review
// index, finished ones get nothing, and every permit and waiting invariant holds.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../server/db/pool.js';
import { listMigrations, migrateUp } from '../server/mariadb/migrations.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { newId } from '../server/ids.js';
import { createTestDbBefore, newTenant, type TestDb } from './support/db.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { hello, openRaw } from './support/raw-worker.js';
import { endOfFileChecks } from './support/fixture.js';
import { assertPermitInvariants } from './support/invariants.js';
import { call } from './support/http.js';
import { expectData } from './support/contract.js';
import { setTaskTime } from './support/waiting.js';

const port = inject('mysqlPort');
const VERSION = 7;
let db: TestDb;
let t: CredentialsFile;
let gw: GatewayProcess | undefined;

/** A database migrated up to (not including) 000007. */
function databaseBefore(): Promise<TestDb> {
  return createTestDbBefore(VERSION, port);
}

/** Inserts a task row as the pre-000007 submit path wrote it (seq from AUTO_INCREMENT). */
async function oldTask(pool: Pool, over: { state: string; priority?: number; key?: string; notBefore?: string; outcome?: string }): Promise<string> {
  const id = newId();
  await pool.query(
    `INSERT INTO tasks (id, namespace_id, application_id, queue_id, handler, handler_version, payload_version, payload, concurrency_key, priority,
        state, max_attempts, not_before, deadline_at, created_at, updated_at, result_outcome)
     VALUES (?, ?, ?, ?, 'h', 'v1', 'v1', '{"n":1}', ?, ?, ?, 3, ${over.notBefore ?? 'NULL'}, UTC_TIMESTAMP(3) + INTERVAL 1 HOUR,
        UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), ?)`,
    [id, t.namespace_id, t.application_id, t.queue_id, over.key ? Buffer.from(over.key) : null, over.priority ?? 0, over.state, over.outcome ?? null],
  );
  return id;
}

beforeAll(async () => {
  db = await databaseBefore();
  t = await newTenant(db);
});
afterAll(async () => {
  await gw?.stop();
  await endOfFileChecks(db);
});

describe('migration 000007 with tasks in the database', () => {
  it('keeps WAITING tasks claimable, in claim order, and counts review tasks from the new index', async () => {
    const oldest = await oldTask(db.pool, { state: 'WAITING' });
    const urgent = await oldTask(db.pool, { state: 'WAITING', priority: 5 });
    const keyed = await oldTask(db.pool, { state: 'WAITING', key: 'object/1' });
    const later = await oldTask(db.pool, { state: 'WAITING', notBefore: 'UTC_TIMESTAMP(3) + INTERVAL 1 HOUR' });
    const review = await oldTask(db.pool, { state: 'NEEDS_REVIEW', outcome: 'unknown' });
    await oldTask(db.pool, { state: 'SUCCEEDED', outcome: 'succeeded' });
    await db.pool.query('UPDATE applications SET unfinished_tasks = 5 WHERE id = ?', [t.application_id]);

    // 000007 and every later migration (they leave these tables alone) applied in order.
    const applied = await migrateUp(db.pool);
    expect(applied).toEqual(
      listMigrations()
        .filter((m) => m.version >= VERSION)
        .map((m) => m.version),
    );
    expect(applied[0]).toBe(VERSION);

    const [waiting] = await db.pool.query<RowDataPacket[]>('SELECT task_id FROM waiting_tasks ORDER BY priority DESC, seq');
    expect(waiting.map((r) => r.task_id)).toEqual([urgent, oldest, keyed, later]);
    const [inReview] = await db.pool.query<RowDataPacket[]>('SELECT id FROM tasks WHERE in_review = 1');
    expect(inReview.map((r) => r.id)).toEqual([review]);
    await assertPermitInvariants(db.pool);

    gw = await startGateway(db.dsn);
    const stats = expectData(await call(gw.url, 'GET', `/v1/queues/${t.queue_id}/stats`, { token: t.token }), 200).stats;
    expect({ waiting: stats.waiting, leased: stats.leased, running: stats.running, needs_review: stats.needs_review }).toEqual({
      waiting: 4,
      leased: 0,
      running: 0,
      needs_review: 1,
    });

    const w = await openRaw(gw.url, t.token);
    w.send(hello([t.queue_id], { capacity: 4, concurrency_keys: true }));
    await w.next('hello.ok');
    const first = [await w.next('task.assign'), await w.next('task.assign'), await w.next('task.assign')];
    // One claim round: the urgent task first, then by age (the keyed one's key is free).
    expect(first.map((a) => a.task.id)).toEqual([urgent, oldest, keyed]);
    expect(first[2].concurrency_token).toBe('1');
    // The one not yet due is claimed once due (its copied not_before moved with it).
    await setTaskTime(db.pool, later, 'not_before', 'UTC_TIMESTAMP(3) - INTERVAL 1 SECOND');
    expect((await w.next('task.assign', 15_000)).task.id).toBe(later);
    const [left] = await db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM waiting_tasks');
    expect(Number(left[0]!.n)).toBe(0);
    await assertPermitInvariants(db.pool);
    w.close();
    await w.closed;
  });
});
