// The nine invariants of dispatch.md, each through a real gateway process with raw WebSocket
// workers and/or in-process SDK workers. Every test uses its own tenant (application + namespace)
// so keys never collide between tests; the gateway listens on a fixed port so restarts keep the URL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { endOfFileChecks } from './support/fixture.js';
import { call } from './support/http.js';
import { hello, openRaw } from './support/raw-worker.js';
import { checkHistory } from './support/history.js';
import { assertPermitInvariants } from './support/invariants.js';
import { submitMany, taskBodies } from './support/bulk.js';
import { backdateLeases, keyRow, liveOnKey, metric, session, startAndFinish, submitTask } from './support/keys-helpers.js';
import { freePort } from '../server/db/embedded-mariadb.js';
import { createWorker, type Worker } from '../worker-sdk/worker.js';
import { syncWaiting } from './support/waiting.js';
import { sleep, waitFor } from './support/wait.js';

let db: TestDb;
let gw: GatewayProcess;
let port: number;
const url = () => gw.url;
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

beforeAll(async () => {
  db = await createTestDb();
  port = await freePort();
  gw = await startGateway(db.dsn, {}, port);
});
afterAll(async () => {
  await endOfFileChecks(db);
});

async function restartGateway(kill9 = false): Promise<void> {
  if (kill9) await gw.kill9();
  else expect(await gw.stop()).toBe(0);
  gw = await startGateway(db.dsn, {}, port);
}

async function liveOfNamespace(ns: string): Promise<number> {
  const [r] = await db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM attempts WHERE namespace_id = ? AND state IN ('LEASED','RUNNING')", [ns]);
  return Number(r[0]!.n);
}

describe('dispatch.md invariants over a real gateway', () => {
  it('1. mutual exclusion: two SDK workers, 40 tasks on one key, never two live attempts', async () => {
    const t = await newTenant(db);
    const key = 'mutex/1';
    let inHandler = 0;
    let maxInHandler = 0;
    const sqlLive: number[] = [];
    const tokens: bigint[] = [];
    const handler = async (e: any) => {
      inHandler++;
      maxInHandler = Math.max(maxInHandler, inHandler);
      sqlLive.push(await liveOnKey(db.pool, t.namespace_id, key));
      tokens.push(e.concurrencyToken);
      await sleep(Math.random() * 10);
      inHandler--;
      return { ok: true };
    };
    const workers: Worker[] = [0, 1].map(() =>
      createWorker({ url: url(), token: t.token, queues: [t.queue_id], capacity: 4, handlers: { h: handler }, logger: quiet }),
    );
    await Promise.all(workers.map((w) => w.ready));
    const N = 40;
    await submitMany(
      url(),
      t.token,
      Array.from({ length: N }, (_, i) => ({
        queue_id: t.queue_id,
        handler: 'h',
        handler_version: 'v1',
        payload_version: 'v1',
        payload: { i },
        concurrency_key: key,
      })),
    );
    await waitFor('all tasks run', async () => tokens.length >= N && (await liveOfNamespace(t.namespace_id)) === 0, 30_000);
    await Promise.all(workers.map((w) => w.close({ timeoutMs: 5000 })));
    expect(maxInHandler).toBe(1);
    expect(sqlLive.every((n) => n === 1)).toBe(true);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]! > tokens[i - 1]!).toBe(true);
    const h = await checkHistory(db.pool, t.namespace_id);
    expect(h.violations).toEqual([]);
    expect(h.byState).toEqual({ SUCCEEDED: N });
    await assertPermitInvariants(db.pool);
  });

  it('2. monotonic tokens: across a gateway restart and after the key went idle; the row is never reset', async () => {
    const t = await newTenant(db);
    const key = 'mono/1';
    const seen: string[] = [];
    const runOne = async () => {
      const w = await session(url(), t, { capacity: 1 });
      await submitTask(url(), t, { concurrency_key: key });
      const a = await w.next('task.assign');
      seen.push(a.concurrency_token);
      await startAndFinish(w, a.attempt_id);
      w.close();
      await w.closed;
    };
    await runOne();
    await runOne();
    // Idle key: the row stays with its highest token and no holder.
    expect(await keyRow(db.pool, t.namespace_id, key)).toMatchObject({ highest_token: '2', holder_attempt_id: null });
    await restartGateway();
    await runOne();
    await restartGateway(true);
    await runOne();
    expect(seen).toEqual(['1', '2', '3', '4']);
    expect(await keyRow(db.pool, t.namespace_id, key)).toMatchObject({ highest_token: '4', holder_attempt_id: null });
    const [n] = await db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM resource_keys WHERE namespace_id = ?', [t.namespace_id]);
    expect(Number(n[0]!.n)).toBe(1);
    await assertPermitInvariants(db.pool);
  });

  it('3. stable tokens: renew, reconnect and resume keep the token (hello.ok.resumed, attempts API)', async () => {
    const t = await newTenant(db);
    await submitTask(url(), t, { concurrency_key: 'stable/1' }); // token 1 goes to an earlier attempt
    const w0 = await session(url(), t, { capacity: 1 });
    const a0 = await w0.next('task.assign');
    await startAndFinish(w0, a0.attempt_id);
    w0.close();
    // Closed before the next submit: a claim for the closing session would burn token 2.
    await w0.closed;

    const task = await submitTask(url(), t, { concurrency_key: 'stable/1' });
    const w1 = await session(url(), t, { capacity: 1 });
    const a = await w1.next('task.assign');
    expect(a.task.id).toBe(task.id);
    expect(a.concurrency_token).toBe('2');
    w1.send({ type: 'start', attempt_id: a.attempt_id });
    await w1.next('start.ok');
    w1.send({ type: 'renew', attempt_ids: [a.attempt_id] });
    const renewed = await w1.next('renew.ok');
    expect(renewed.leases.map((l: any) => l.attempt_id)).toEqual([a.attempt_id]);
    const viaApi = async () => (await call(url(), 'GET', `/v1/attempts/${a.attempt_id}`, { token: t.token })).body.data.attempt;
    expect(await viaApi()).toMatchObject({ state: 'RUNNING', concurrency_token: '2' });

    // Socket drop, then reconnect (same worker_id) to a restarted gateway, resuming the attempt.
    w1.ws.terminate();
    await restartGateway(true);
    const w2 = await session(url(), t, { worker_id: w1.workerId, capacity: 1, resume: [a.attempt_id] });
    expect(w2.ok.resumed).toEqual([{ attempt_id: a.attempt_id, state: 'RUNNING', lease_expires_at: expect.any(String), concurrency_token: '2' }]);
    expect(w2.ok.lost).toEqual([]);
    expect(await viaApi()).toMatchObject({ state: 'RUNNING', concurrency_token: '2' });
    expect(await keyRow(db.pool, t.namespace_id, 'stable/1')).toMatchObject({ highest_token: '2', holder_attempt_id: a.attempt_id });
    w2.send({ type: 'renew', attempt_ids: [a.attempt_id] });
    expect((await w2.next('renew.ok')).lost).toEqual([]);
    w2.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded' });
    expect((await w2.next('result.ok')).deduplicated).toBe(false);
    expect(await viaApi()).toMatchObject({ state: 'SUCCEEDED', concurrency_token: '2' });
    w2.close();
    await assertPermitInvariants(db.pool);
  });

  it('4. no double release: a duplicate result after the key was re-granted leaves the new holder alone', async () => {
    const t = await newTenant(db);
    const key = 'dup/1';
    const wa = await session(url(), t, { capacity: 1 });
    await submitTask(url(), t, { concurrency_key: key });
    const a1 = await wa.next('task.assign');
    const res1 = { type: 'result', attempt_id: a1.attempt_id, outcome: 'succeeded', output: { v: 1 } };
    wa.send({ type: 'start', attempt_id: a1.attempt_id });
    await wa.next('start.ok');
    wa.send(res1);
    expect((await wa.next('result.ok')).deduplicated).toBe(false);
    wa.send({ type: 'capacity', capacity: 0 });

    const wb = await session(url(), t, { capacity: 1 });
    await submitTask(url(), t, { concurrency_key: key });
    const a2 = await wb.next('task.assign');
    expect(BigInt(a2.concurrency_token)).toBeGreaterThan(BigInt(a1.concurrency_token));
    const before = await keyRow(db.pool, t.namespace_id, key);
    expect(before!.holder_attempt_id).toBe(a2.attempt_id);
    await assertPermitInvariants(db.pool);

    // Duplicate on the same session, then from a new session of the same worker identity.
    wa.send(res1);
    expect((await wa.next('result.ok')).deduplicated).toBe(true);
    await assertPermitInvariants(db.pool);
    wa.ws.terminate();
    const wa2 = await session(url(), t, { worker_id: wa.workerId, capacity: 0 });
    wa2.send(res1);
    expect(await wa2.next('result.ok')).toMatchObject({ deduplicated: true, task_state: 'SUCCEEDED' });
    // A conflicting result for the finished attempt changes nothing either.
    wa2.send({ ...res1, outcome: 'failed', output: undefined });
    expect(await wa2.next('error')).toMatchObject({ code: 'STATE_CONFLICT', fatal: false });
    expect(await keyRow(db.pool, t.namespace_id, key)).toEqual(before);
    expect(await liveOnKey(db.pool, t.namespace_id, key)).toBe(1);

    await assertPermitInvariants(db.pool);
    // A late result of an expired attempt (LEASE_LOST) does not release the next holder either.
    wb.send({ type: 'capacity', capacity: 0 });
    // The capacity frame has no reply: this waits for the gateway to read it, so that wb is not
    // offered a2's task again once a2 expires (the assignment below must be wc's).
    await sleep(100);
    await backdateLeases(db.pool, [a2.attempt_id]);
    await waitFor('expiry of a2', async () => (await keyRow(db.pool, t.namespace_id, key))!.holder_attempt_id === null, 5000);
    const wc = await session(url(), t, { capacity: 1 });
    const a3 = await wc.next('task.assign');
    expect(a3.task.id).toBe(a2.task.id);
    const held = await keyRow(db.pool, t.namespace_id, key);
    expect(held!.holder_attempt_id).toBe(a3.attempt_id);
    wb.send({ type: 'result', attempt_id: a2.attempt_id, outcome: 'succeeded' });
    expect(await wb.next('error')).toMatchObject({ code: 'LEASE_LOST', attempt_id: a2.attempt_id });
    expect(await keyRow(db.pool, t.namespace_id, key)).toEqual(held);
    await startAndFinish(wc, a3.attempt_id);
    for (const w of [wa2, wb, wc]) w.close();
    await assertPermitInvariants(db.pool);
  });

  it('5. permit accounting: counters equal live attempts after socket drops, unlisted resume, expiry and a gateway kill -9', async () => {
    const t = await newTenant(db);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await submitTask(url(), t, { concurrency_key: `acct/${i}` })).id);
    for (let i = 0; i < 3; i++) ids.push((await submitTask(url(), t)).id);
    const wa = await session(url(), t, { capacity: 4 });
    const got = [await wa.next('task.assign'), await wa.next('task.assign'), await wa.next('task.assign'), await wa.next('task.assign')];
    // Start two (one keyed, one not), leave two LEASED, then the socket drops.
    const keyed = got.find((a) => a.concurrency_token)!;
    const plain = got.find((a) => !a.concurrency_token)!;
    for (const a of [keyed, plain]) {
      wa.send({ type: 'start', attempt_id: a.attempt_id });
      await wa.next('start.ok');
    }
    wa.ws.terminate();
    // Absence: for the gateway to see the dropped socket; a drop releases nothing (dispatch.md).
    await sleep(200);
    await assertPermitInvariants(db.pool);
    expect(await liveOfNamespace(t.namespace_id)).toBe(4);

    // Reconnect listing nothing: the two never-started attempts are released at once.
    const wa2 = await session(url(), t, { worker_id: wa.workerId, capacity: 0, resume: [] });
    expect(wa2.ok.resumed).toEqual([]);
    await assertPermitInvariants(db.pool);
    expect(await liveOfNamespace(t.namespace_id)).toBe(2);

    // A second worker takes the rest, then the gateway is killed under it.
    const wb = await session(url(), t, { capacity: 4 });
    const taken: any[] = [];
    for (let i = 0; i < 4; i++) taken.push(await wb.next('task.assign'));
    wb.send({ type: 'start', attempt_id: taken[0].attempt_id });
    await wb.next('start.ok');
    await restartGateway(true);
    await assertPermitInvariants(db.pool);
    expect(await liveOfNamespace(t.namespace_id)).toBe(6);

    // Leases run out (backdated): LEASED → WAITING, RUNNING → NEEDS_REVIEW, every permit back.
    const [live] = await db.pool.query<RowDataPacket[]>("SELECT id FROM attempts WHERE namespace_id = ? AND state IN ('LEASED','RUNNING')", [t.namespace_id]);
    await backdateLeases(
      db.pool,
      live.map((r) => r.id as string),
    );
    await waitFor('sweeper recovery', async () => (await liveOfNamespace(t.namespace_id)) === 0, 5000);
    await assertPermitInvariants(db.pool);
    const [q] = await db.pool.query<RowDataPacket[]>('SELECT active_attempts FROM queues WHERE id = ?', [t.queue_id]);
    expect(Number(q[0]!.active_attempts)).toBe(0);
    const [held] = await db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM resource_keys WHERE namespace_id = ? AND holder_attempt_id IS NOT NULL', [
      t.namespace_id,
    ]);
    expect(Number(held[0]!.n)).toBe(0);
    // The three started attempts (keyed and plain of wa, taken[0] of wb) went to review; the three
    // never-started ones wait again and finish normally on a fresh worker.
    const byState = async () => {
      const [r] = await db.pool.query<RowDataPacket[]>('SELECT state, COUNT(*) AS n FROM tasks WHERE namespace_id = ? GROUP BY state', [t.namespace_id]);
      return Object.fromEntries(r.map((x) => [x.state, Number(x.n)]));
    };
    expect(await byState()).toEqual({ WAITING: 3, NEEDS_REVIEW: 3 });
    const wc = await session(url(), t, { capacity: 4 });
    for (let i = 0; i < 3; i++) {
      const a = await wc.next('task.assign');
      await startAndFinish(wc, a.attempt_id);
    }
    expect(await byState()).toEqual({ SUCCEEDED: 3, NEEDS_REVIEW: 3 });
    await assertPermitInvariants(db.pool);
    wc.close();
    wa2.close();
  });

  it('6. exclusion before LIMIT: 10 000 waiting tasks on a held key do not hide a free-key task', async () => {
    const t = await newTenant(db);
    const busy = 'hot/busy';
    const holder = await session(url(), t, { capacity: 1 });
    await submitTask(url(), t, { concurrency_key: busy });
    const held = await holder.next('task.assign');
    holder.send({ type: 'start', attempt_id: held.attempt_id });
    await holder.next('start.ok');
    // 10 000 WAITING tasks on the busy key, older and of higher priority than the free one.
    const N = 10_000;
    const rows: string[] = [];
    const args: unknown[] = [];
    for (let i = 0; i < N; i++) {
      rows.push(`(?, ?, ?, ?, 'h', 'v1', 'v1', '{}', ?, 9, 'WAITING', 3, UTC_TIMESTAMP(3) + INTERVAL 1 HOUR, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`);
      args.push(`b${String(i).padStart(8, '0')}${t.namespace_id.slice(0, 23)}`, t.namespace_id, t.application_id, t.queue_id, Buffer.from(busy));
    }
    for (let i = 0; i < N; i += 2000) {
      await db.pool.query(
        `INSERT INTO tasks (id, namespace_id, application_id, queue_id, handler, handler_version, payload_version, payload, concurrency_key, priority, state, max_attempts, deadline_at, created_at, updated_at)
         VALUES ${rows.slice(i, i + 2000).join(',')}`,
        args.slice(i * 5, (i + 2000) * 5),
      );
    }
    await syncWaiting(db.pool); // their claimable rows, as a submit writes them
    await db.pool.query('UPDATE applications SET unfinished_tasks = unfinished_tasks + ? WHERE id = ?', [N, t.application_id]);
    const rounds = await metric(url(), 'orbit_claim_rounds_total');
    const free = await session(url(), t, { capacity: 1 });
    // Absence: after the free session's first claim round (its hello's) nothing was assigned.
    await waitFor("the free session's claim round", async () => (await metric(url(), 'orbit_claim_rounds_total')) > rounds, 10_000);
    expect(free.frames.filter((f) => f.type === 'task.assign')).toEqual([]); // nothing claimable yet
    const task = await submitTask(url(), t, { concurrency_key: 'hot/free', priority: 0 });
    // No time bound (that figure is the bench's): with the exclusion after LIMIT the claim would
    // only ever see busy-key candidates and this task would never be assigned.
    const a = await free.next('task.assign');
    expect(a.task.id).toBe(task.id);
    expect(a.concurrency_token).toBe('1');
    await startAndFinish(free, a.attempt_id);
    // Clean up the synthetic backlog before the key is released (else one of it is claimed).
    const [res] = await db.pool.query("UPDATE tasks SET state = 'CANCELLED', finished_at = UTC_TIMESTAMP(3) WHERE namespace_id = ? AND state = 'WAITING'", [
      t.namespace_id,
    ]);
    expect((res as { affectedRows: number }).affectedRows).toBe(N);
    await syncWaiting(db.pool);
    await db.pool.query('UPDATE applications SET unfinished_tasks = unfinished_tasks - ? WHERE id = ?', [N, t.application_id]);
    await startAndFinish(holder, held.attempt_id);
    free.close();
    holder.close();
    await assertPermitInvariants(db.pool);
  });

  it('7. capability gating: a flagless session never receives a keyed task; the waiting metric shows it', async () => {
    const t = await newTenant(db);
    const flagless = await session(url(), t, { concurrency_keys: false, capacity: 8 });
    const keyed = await submitTask(url(), t, { concurrency_key: 'cap/1' });
    const plain = await submitTask(url(), t);
    const a = await flagless.next('task.assign');
    expect(a.task.id).toBe(plain.id);
    expect(a.concurrency_token).toBeUndefined();
    await startAndFinish(flagless, a.attempt_id);
    await waitFor('keyed-waiting metric > 0', async () => (await metric(url(), 'orbit_keyed_tasks_waiting_without_capable_session')) > 0, {
      timeout: 7000,
      interval: 250,
    });
    expect(flagless.frames.filter((f) => f.type === 'task.assign')).toEqual([]);
    const row = await call(url(), 'GET', `/v1/tasks/${keyed.id}`, { token: t.token });
    expect(row.body.data.task.state).toBe('WAITING');

    const capable = await session(url(), t, { capacity: 1 });
    const b = await capable.next('task.assign');
    expect(b.task.id).toBe(keyed.id);
    expect(b.concurrency_token).toBe('1');
    await startAndFinish(capable, b.attempt_id);
    expect(flagless.frames.filter((f) => f.type === 'task.assign')).toEqual([]);
    // The worker identity's flag is frozen: the same worker_id cannot come back with the flag.
    const flip = await openRaw(url(), t.token);
    flip.send(hello([t.queue_id], { worker_id: flagless.workerId, concurrency_keys: true }));
    expect(await flip.next('error')).toMatchObject({ code: 'STATE_CONFLICT', fatal: true });
    expect((await flip.closed).code).toBe(4409);
    capable.close();
    flagless.close();
    await assertPermitInvariants(db.pool);
  });

  it('8. exact keys: case and Unicode forms are distinct keys; namespaces never interact', async () => {
    const t = await newTenant(db);
    const t2 = await newTenant(db);
    const keys = ['object/A', 'object/a', '\u00e9', 'e\u0301'];
    const w = await session(url(), t, { capacity: 8 });
    for (const k of keys) await submitTask(url(), t, { concurrency_key: k });
    const w2 = await session(url(), t2, { capacity: 8 });
    await submitTask(url(), t2, { concurrency_key: 'object/A' });
    const got = [];
    for (let i = 0; i < keys.length; i++) got.push(await w.next('task.assign'));
    const other = await w2.next('task.assign');
    expect(got.map((a) => a.task.concurrency_key).sort()).toEqual([...keys].sort());
    expect(got.every((a) => a.concurrency_token === '1')).toBe(true);
    expect(other).toMatchObject({ concurrency_token: '1', task: { concurrency_key: 'object/A' } });
    // All five LEASED at the same time.
    const [live] = await db.pool.query<RowDataPacket[]>(
      "SELECT namespace_id, concurrency_key, CAST(concurrency_token AS CHAR) AS tok FROM attempts WHERE namespace_id IN (?, ?) AND state = 'LEASED'",
      [t.namespace_id, t2.namespace_id],
    );
    expect(live).toHaveLength(5);
    expect(live.every((r) => r.tok === '1')).toBe(true);
    expect(new Set(live.filter((r) => r.namespace_id === t.namespace_id).map((r) => (r.concurrency_key as Buffer).toString('hex'))).size).toBe(4);
    for (const a of got) await startAndFinish(w, a.attempt_id);
    await startAndFinish(w2, other.attempt_id);
    w.close();
    w2.close();
    await assertPermitInvariants(db.pool);
  });

  it('9. nothing lost: worker kills, socket drops and a gateway kill -9; every task terminal or in review with history', async () => {
    const t = await newTenant(db);
    await db.pool.query('UPDATE queues SET lease_seconds = 3 WHERE id = ?', [t.queue_id]);
    const handler = async () => {
      await sleep(Math.random() * 15);
      return { ok: true };
    };
    const mk = () =>
      createWorker({
        url: url(),
        token: t.token,
        queues: [t.queue_id],
        capacity: 4,
        handlers: { h: handler },
        logger: quiet,
        reconnect: { initialDelayMs: 50, maxDelayMs: 500 },
      });
    const workers = [mk(), mk(), mk()];
    await Promise.all(workers.map((w) => w.ready));
    const N = 300;
    const tasks = taskBodies(t.queue_id, N, (i) => (i % 2 === 0 ? `lost/${i % 10}` : undefined));
    const submitting = submitMany(url, t.token, tasks, { concurrency: 8 });
    // A raw worker that grabs tasks, starts some and vanishes (socket drop without results).
    const flaky = await session(url(), t, { capacity: 3 });
    const grabbed = [await flaky.next('task.assign', 15_000)];
    flaky.send({ type: 'start', attempt_id: grabbed[0].attempt_id });
    await flaky.next('start.ok');
    flaky.ws.terminate();
    // A worker killed (no drain), a gateway killed, a fresh worker.
    await waitFor(
      'some progress',
      async () => {
        const [r] = await db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM tasks WHERE namespace_id = ? AND state = 'SUCCEEDED'", [t.namespace_id]);
        return Number(r[0]!.n) >= 60;
      },
      30_000,
    );
    await workers[0]!.close({ timeoutMs: 0 });
    await restartGateway(true);
    workers.push(mk());
    const ids = await submitting;
    expect(new Set(ids).size).toBe(N);
    // Attempts left by the killed worker and the flaky socket are recovered by lease expiry.
    const settled = await waitFor(
      'every task settled',
      async () => {
        const [r] = await db.pool.query<RowDataPacket[]>('SELECT state, COUNT(*) AS n FROM tasks WHERE namespace_id = ? GROUP BY state', [t.namespace_id]);
        const c = Object.fromEntries(r.map((x) => [x.state, Number(x.n)]));
        return (c.WAITING ?? 0) + (c.LEASED ?? 0) + (c.RUNNING ?? 0) === 0 ? c : null;
      },
      { timeout: 45_000, interval: 200 },
    );
    await Promise.all(workers.map((w) => w.close({ timeoutMs: 3000 })));
    expect((settled.SUCCEEDED ?? 0) + (settled.NEEDS_REVIEW ?? 0)).toBe(N);
    const [orphans] = await db.pool.query<RowDataPacket[]>(
      'SELECT COUNT(*) AS n FROM tasks t WHERE t.namespace_id = ? AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.task_id = t.id)',
      [t.namespace_id],
    );
    expect(Number(orphans[0]!.n)).toBe(0);
    // Every task's attempt numbers are 1..n with no hole.
    const [holes] = await db.pool.query<RowDataPacket[]>(
      'SELECT task_id FROM attempts WHERE namespace_id = ? GROUP BY task_id HAVING MAX(attempt_no) <> COUNT(*) OR MIN(attempt_no) <> 1',
      [t.namespace_id],
    );
    expect(holes).toEqual([]);
    const h = await checkHistory(db.pool, t.namespace_id);
    expect(h.violations).toEqual([]);
    await assertPermitInvariants(db.pool);
  }, 120_000);
});
