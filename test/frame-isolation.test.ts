// One bad row cannot stop everyone: the real frame committer and sweeper on a real
// database (in-process host, test/support/session-host.ts), with a statement fault that fails every
// statement naming one attempt (the pools' tap, bench/pool-tap.ts). A frame batch that fails
// is run again frame by frame, so the other frames commit and only that one fails; a sweep batch is
// run again row by row the same way. And a real result transaction aborted before each of its
// statements (a real 1213, retried; the connection killed, not retried) keeps the stream head equal
// to the last event, and the result sent again succeeds.
import { advanceRunsInTx } from '../server/workflows/apply.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import type { Credential } from '../server/db/credentials.js';
import { findCredentialByTokenHash } from '../server/db/credentials.js';
import { hashToken } from '../server/admin/access.js';
import { createPool, type Pool } from '../server/db/pool.js';
import { PoolTap } from '../bench/pool-tap.js';
import { runFrameBatch } from '../server/dispatch/frame-committer.js';
import type { FrameCommand } from '../server/dispatch/frame-commands.js';
import { sweep } from '../server/dispatch/sweeper.js';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { assertPermitInvariants } from './support/invariants.js';
import { hello, openRaw, type RawWorker } from './support/raw-worker.js';
import { InProcessHost } from './support/session-host.js';

let db: TestDb;
let t: CredentialsFile;
let cred: Credential;
let host: InProcessHost;
let url: string;
/** One connection of its own for the transactions under test: the fault hook sees only its statements. */
let mine: Pool;
const workers: RawWorker[] = [];
/** On both pools: the statement faults of the tests. */
const tap = new PoolTap();

beforeAll(async () => {
  db = await createTestDb();
  tap.attach(db.pool);
  t = await newTenant(db, { queues: ['frames', 'sweep', 'abort', 'sweep-batch'] });
  cred = (await findCredentialByTokenHash(db.pool, hashToken(t.token)))!;
  host = new InProcessHost(db.pool);
  url = await host.listen();
  mine = tap.attach(createPool(db.dsn, { connectionLimit: 1 }));
});
afterEach(async () => {
  tap.setHook(null);
  for (const w of workers.splice(0)) w.close();
  await assertPermitInvariants(db.pool);
});
afterAll(async () => {
  await mine?.end();
  await host?.close();
  await db?.drop();
});

const BAD_ROW = "SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = 1644, MESSAGE_TEXT = 'injected: a row that cannot be written'";

/** A worker on `queue` holding `n` fresh tasks (their task.assign frames). */
async function holding(queue: string, n: number): Promise<{ w: RawWorker; workerId: string; assigns: any[] }> {
  const created = host.nextSession(); // hello only once the server side has its Session
  const w = await openRaw(url, t.token);
  workers.push(w);
  await created;
  const h = hello([t.queues[queue]!], { capacity: n });
  w.send(h);
  await w.next('hello.ok');
  for (let i = 0; i < n; i++) {
    const out = await host.submit(cred, t.queues[queue]!, `${queue}-${Date.now()}-${i}`);
    if (!out.ok) throw out.error;
  }
  const assigns = [];
  for (let i = 0; i < n; i++) assigns.push(await w.next('task.assign'));
  await host.dispatcher.idle();
  return { w, workerId: h.worker_id, assigns };
}

const resultOf = (workerId: string, attemptId: string): FrameCommand => ({
  kind: 'result',
  who: { namespaceId: t.namespace_id, workerId, credentialId: cred.id },
  frame: { type: 'result', attempt_id: attemptId, outcome: 'succeeded', output: { ok: true } },
  output: '{"ok":true}',
});

async function taskStates(taskIds: string[]): Promise<string[]> {
  const [rows] = await db.pool.query<RowDataPacket[]>('SELECT id, state FROM tasks WHERE id IN (?)', [taskIds]);
  const by = new Map(rows.map((r) => [r.id as string, r.state as string]));
  return taskIds.map((id) => by.get(id)!);
}

async function expectHeadAtLastEvent(): Promise<void> {
  const [rows] = await db.pool.query<RowDataPacket[]>(
    `SELECT h.last_sequence AS head, (SELECT MAX(sequence) FROM result_events e WHERE e.namespace_id = h.namespace_id) AS max FROM stream_heads h WHERE h.namespace_id = ?`,
    [t.namespace_id],
  );
  expect(rows[0]!.max).toBe(rows[0]!.head);
}

describe('one bad row fails alone', () => {
  it('a frame batch failing on one attempt is run frame by frame: the others commit, that one fails, and later succeeds', async () => {
    const { workerId, assigns } = await holding('frames', 3);
    const bad = assigns[1].attempt_id as string;
    tap.setHook((s) => (s.includes(bad) ? BAD_ROW : null));
    const r = await runFrameBatch(
      db.pool,
      advanceRunsInTx,
      assigns.map((a) => resultOf(workerId, a.attempt_id)),
    );
    expect(r.outcomes[0]).toMatchObject({ ok: true, kind: 'result', reply: { task_state: 'SUCCEEDED' } });
    expect(r.outcomes[1]).toMatchObject({ ok: false, thrown: { errno: 1644 } });
    expect(r.outcomes[2]).toMatchObject({ ok: true, kind: 'result', reply: { task_state: 'SUCCEEDED' } });
    const ids = assigns.map((a) => a.task.id as string);
    expect(await taskStates(ids)).toEqual(['SUCCEEDED', 'LEASED', 'SUCCEEDED']);
    tap.setHook(null);
    const again = await runFrameBatch(db.pool, advanceRunsInTx, [resultOf(workerId, bad)]);
    expect(again.outcomes[0]).toMatchObject({ ok: true, reply: { task_state: 'SUCCEEDED', deduplicated: false } });
    expect(await taskStates(ids)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    await expectHeadAtLastEvent();
  });

  it('a sweep failing on one expired attempt is run row by row: the other is recovered, that one is reported, and recovered next time', async () => {
    const { w, assigns } = await holding('sweep', 2);
    w.send({ type: 'capacity', capacity: 0 }); // the recovered tasks stay WAITING
    const ids = assigns.map((a) => a.attempt_id as string);
    await db.pool.query('UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE id IN (?)', [ids]);
    const bad = ids[0]!;
    const badTask = assigns[0].task.id as string;
    tap.setHook((s) => (s.includes(badTask) ? BAD_ROW : null));
    const r = await sweep(db.pool, advanceRunsInTx);
    expect(r.failed.map((x) => x.row)).toEqual([{ kind: 'expired', id: bad }]);
    expect(r.revoked.map((x) => x.attemptId)).toEqual([ids[1]]);
    const state = async (id: string) => (await db.pool.query<RowDataPacket[]>('SELECT state FROM attempts WHERE id = ?', [id]))[0][0]!.state as string;
    expect([await state(bad), await state(ids[1]!)]).toEqual(['LEASED', 'EXPIRED']);
    tap.setHook(null);
    const next = await sweep(db.pool, advanceRunsInTx);
    expect(next.failed).toEqual([]);
    expect(next.revoked.map((x) => x.attemptId)).toEqual([bad]);
  });
});

describe('a sweep is batch-shaped', () => {
  it('twelve expired attempts are revoked in one transaction that locks their tasks in one statement', async () => {
    const { w, assigns } = await holding('sweep-batch', 12);
    w.send({ type: 'capacity', capacity: 0 }); // the recovered tasks stay WAITING
    const ids = assigns.map((a) => a.attempt_id as string);
    await db.pool.query('UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE id IN (?)', [ids]);
    const taskLocks: string[] = [];
    tap.setHook((s) => {
      if (/^SELECT[\s\S]*FROM tasks WHERE id[\s\S]*FOR UPDATE$/.test(s.trim())) taskLocks.push(s);
      return null;
    });
    const r = await sweep(db.pool, advanceRunsInTx);
    tap.setHook(null);
    expect(r.failed).toEqual([]);
    expect(r.revoked.map((x) => x.attemptId).sort()).toEqual([...ids].sort());
    expect(taskLocks).toHaveLength(1);
    expect(await taskStates(assigns.map((a) => a.task.id as string))).toEqual(Array(12).fill('WAITING'));
  });
});

describe('the result transaction aborted before each of its statements', () => {
  it('a real 1213 there is retried to success; the connection killed there fails it whole; head = last event every time', async () => {
    const threadOf = async () => {
      const c = await mine.getConnection();
      const id = c.threadId;
      c.release();
      return id;
    };
    // The statements of one result transaction (recorded on a first result).
    let seen = 0;
    const first = await holding('abort', 1);
    let tid = await threadOf();
    tap.setHook((_s, thread) => (thread === tid ? (seen++, null) : null));
    expect((await runFrameBatch(mine, advanceRunsInTx, [resultOf(first.workerId, first.assigns[0].attempt_id)])).outcomes[0]).toMatchObject({ ok: true });
    tap.setHook(null);
    expect(seen).toBeGreaterThanOrEqual(6);
    for (let at = 0; at < seen; at++) {
      for (const kill of [false, true]) {
        const { workerId, assigns } = await holding('abort', 1);
        const cmd = resultOf(workerId, assigns[0].attempt_id);
        tid = await threadOf();
        let i = 0;
        tap.setHook((_s, thread) => {
          if (thread !== tid || i++ !== at) return null;
          return kill ? `KILL CONNECTION ${thread}` : "SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = 'injected deadlock'";
        });
        if (kill) await expect(runFrameBatch(mine, advanceRunsInTx, [cmd])).rejects.toThrow();
        else
          expect((await runFrameBatch(mine, advanceRunsInTx, [cmd])).outcomes[0]).toMatchObject({
            ok: true,
            reply: { task_state: 'SUCCEEDED', deduplicated: false },
          });
        tap.setHook(null);
        await expectHeadAtLastEvent();
        // Sent again (as a worker does after a reconnect): accepted, or deduplicated if it committed.
        expect((await runFrameBatch(mine, advanceRunsInTx, [cmd])).outcomes[0]).toMatchObject({ ok: true, reply: { task_state: 'SUCCEEDED' } });
        expect(await taskStates([assigns[0].task.id])).toEqual(['SUCCEEDED']);
        await expectHeadAtLastEvent();
      }
    }
  });
});
