// Invariants 1-5 of docs/guarantees.md (exclusion, tokens, release, permit accounting), each through a real
// gateway process with raw WebSocket workers and/or in-process SDK workers (6-9, the claim side and
// nothing lost: keys-invariants-claims.test.ts). Every test uses its own tenant (application + namespace)
// so keys never collide between tests; the gateway listens on a fixed port so restarts keep the URL.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { newTenant } from './support/db.js';
import { call } from './support/http.js';
import { checkHistory } from './support/history.js';
import { assertPermitInvariants } from './support/invariants.js';
import { submitMany } from './support/bulk.js';
import { useRestartableGateway, backdateLeases, keyRow, liveOnKey, session, startAndFinish } from './support/keys-helpers.js';
import { submitTask } from './support/submit.js';
import { createWorker, type Worker } from '../worker-sdk/worker.js';
import { sleep, waitFor } from './support/wait.js';

const k = useRestartableGateway();
const url = k.url;
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

async function liveOfNamespace(ns: string): Promise<number> {
  const [r] = await k.db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM attempts WHERE namespace_id = ? AND state IN ('LEASED','RUNNING')", [ns]);
  return Number(r[0]!.n);
}

describe('docs/guarantees.md invariants over a real gateway', () => {
  it('1. mutual exclusion: two SDK workers, 40 tasks on one key, never two live attempts', async () => {
    const t = await newTenant(k.db);
    const key = 'mutex/1';
    let inHandler = 0;
    let maxInHandler = 0;
    const sqlLive: number[] = [];
    const tokens: bigint[] = [];
    const handler = async (e: any) => {
      inHandler++;
      maxInHandler = Math.max(maxInHandler, inHandler);
      sqlLive.push(await liveOnKey(k.db.pool, t.namespace_id, key));
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
    const h = await checkHistory(k.db.pool, t.namespace_id);
    expect(h.violations).toEqual([]);
    expect(h.byState).toEqual({ SUCCEEDED: N });
    await assertPermitInvariants(k.db.pool);
  });

  it('2. monotonic tokens: across a gateway restart and after the key went idle; the row is never reset', async () => {
    const t = await newTenant(k.db);
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
    expect(await keyRow(k.db.pool, t.namespace_id, key)).toMatchObject({ highest_token: '2', holder_attempt_id: null });
    await k.restart();
    await runOne();
    await k.restart(true);
    await runOne();
    expect(seen).toEqual(['1', '2', '3', '4']);
    expect(await keyRow(k.db.pool, t.namespace_id, key)).toMatchObject({ highest_token: '4', holder_attempt_id: null });
    const [n] = await k.db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM resource_keys WHERE namespace_id = ?', [t.namespace_id]);
    expect(Number(n[0]!.n)).toBe(1);
    await assertPermitInvariants(k.db.pool);
  });

  it('3. stable tokens: renew, reconnect and resume keep the token (hello.ok.resumed, attempts API)', async () => {
    const t = await newTenant(k.db);
    await submitTask(url(), t, { concurrency_key: 'stable/1' }); // token 1 goes to an earlier attempt
    const w0 = await session(url(), t, { capacity: 1 });
    const a0 = await w0.next('task.assign');
    await startAndFinish(w0, a0.attempt_id);
    w0.close();
    // Closed before the next submit: a claim for the closing session would burn token 2. The
    // client's close is not enough — under load the gateway may not have seen it yet (this test
    // once got token 3): wait for the gateway to mark the session closed.
    await w0.closed;
    await waitFor("the gateway to close w0's session", async () => {
      const [rows] = await k.db.pool.query<RowDataPacket[]>('SELECT state FROM worker_sessions WHERE namespace_id = ? AND worker_id = ?', [
        t.namespace_id,
        w0.workerId,
      ]);
      return rows.length > 0 && rows.every((r) => r.state === 'CLOSED');
    });

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
    await k.restart(true);
    const w2 = await session(url(), t, { worker_id: w1.workerId, capacity: 1, resume: [a.attempt_id] });
    expect(w2.ok.resumed).toEqual([{ attempt_id: a.attempt_id, state: 'RUNNING', lease_expires_at: expect.any(String), concurrency_token: '2' }]);
    expect(w2.ok.lost).toEqual([]);
    expect(await viaApi()).toMatchObject({ state: 'RUNNING', concurrency_token: '2' });
    expect(await keyRow(k.db.pool, t.namespace_id, 'stable/1')).toMatchObject({ highest_token: '2', holder_attempt_id: a.attempt_id });
    w2.send({ type: 'renew', attempt_ids: [a.attempt_id] });
    expect((await w2.next('renew.ok')).lost).toEqual([]);
    w2.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded' });
    expect((await w2.next('result.ok')).deduplicated).toBe(false);
    expect(await viaApi()).toMatchObject({ state: 'SUCCEEDED', concurrency_token: '2' });
    w2.close();
    await assertPermitInvariants(k.db.pool);
  });

  it('4. no double release: a duplicate result after the key was re-granted leaves the new holder alone', async () => {
    const t = await newTenant(k.db);
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
    const before = await keyRow(k.db.pool, t.namespace_id, key);
    expect(before!.holder_attempt_id).toBe(a2.attempt_id);
    await assertPermitInvariants(k.db.pool);

    // Duplicate on the same session, then from a new session of the same worker identity.
    wa.send(res1);
    expect((await wa.next('result.ok')).deduplicated).toBe(true);
    await assertPermitInvariants(k.db.pool);
    wa.ws.terminate();
    const wa2 = await session(url(), t, { worker_id: wa.workerId, capacity: 0 });
    wa2.send(res1);
    expect(await wa2.next('result.ok')).toMatchObject({ deduplicated: true, task_state: 'SUCCEEDED' });
    // A conflicting result for the finished attempt changes nothing either.
    wa2.send({ ...res1, outcome: 'failed', output: undefined });
    expect(await wa2.next('error')).toMatchObject({ code: 'STATE_CONFLICT', fatal: false });
    expect(await keyRow(k.db.pool, t.namespace_id, key)).toEqual(before);
    expect(await liveOnKey(k.db.pool, t.namespace_id, key)).toBe(1);

    await assertPermitInvariants(k.db.pool);
    // A late result of an expired attempt (LEASE_LOST) does not release the next holder either.
    wb.send({ type: 'capacity', capacity: 0 });
    // The capacity frame has no reply: this waits for the gateway to read it, so that wb is not
    // offered a2's task again once a2 expires (the assignment below must be wc's).
    await sleep(100);
    await backdateLeases(k.db.pool, [a2.attempt_id]);
    await waitFor('expiry of a2', async () => (await keyRow(k.db.pool, t.namespace_id, key))!.holder_attempt_id === null, 5000);
    const wc = await session(url(), t, { capacity: 1 });
    const a3 = await wc.next('task.assign');
    expect(a3.task.id).toBe(a2.task.id);
    const held = await keyRow(k.db.pool, t.namespace_id, key);
    expect(held!.holder_attempt_id).toBe(a3.attempt_id);
    wb.send({ type: 'result', attempt_id: a2.attempt_id, outcome: 'succeeded' });
    expect(await wb.next('error')).toMatchObject({ code: 'LEASE_LOST', attempt_id: a2.attempt_id });
    expect(await keyRow(k.db.pool, t.namespace_id, key)).toEqual(held);
    await startAndFinish(wc, a3.attempt_id);
    for (const w of [wa2, wb, wc]) w.close();
    await assertPermitInvariants(k.db.pool);
  });

  it('5. permit accounting: counters equal live attempts after socket drops, unlisted resume, expiry and a gateway kill -9', async () => {
    const t = await newTenant(k.db);
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
    // Absence: for the gateway to see the dropped socket; a drop releases nothing (docs/guarantees.md).
    await sleep(200);
    await assertPermitInvariants(k.db.pool);
    expect(await liveOfNamespace(t.namespace_id)).toBe(4);

    // Reconnect listing nothing: the two never-started attempts are released at once.
    const wa2 = await session(url(), t, { worker_id: wa.workerId, capacity: 0, resume: [] });
    expect(wa2.ok.resumed).toEqual([]);
    await assertPermitInvariants(k.db.pool);
    expect(await liveOfNamespace(t.namespace_id)).toBe(2);

    // A second worker takes the rest, then the gateway is killed under it.
    const wb = await session(url(), t, { capacity: 4 });
    const taken: any[] = [];
    for (let i = 0; i < 4; i++) taken.push(await wb.next('task.assign'));
    wb.send({ type: 'start', attempt_id: taken[0].attempt_id });
    await wb.next('start.ok');
    await k.restart(true);
    await assertPermitInvariants(k.db.pool);
    expect(await liveOfNamespace(t.namespace_id)).toBe(6);

    // Leases run out (backdated): LEASED → WAITING, RUNNING → NEEDS_REVIEW, every permit back.
    const [live] = await k.db.pool.query<RowDataPacket[]>("SELECT id FROM attempts WHERE namespace_id = ? AND state IN ('LEASED','RUNNING')", [t.namespace_id]);
    await backdateLeases(
      k.db.pool,
      live.map((r) => r.id as string),
    );
    await waitFor('sweeper recovery', async () => (await liveOfNamespace(t.namespace_id)) === 0, 5000);
    await assertPermitInvariants(k.db.pool);
    const [q] = await k.db.pool.query<RowDataPacket[]>('SELECT active_attempts FROM queues WHERE id = ?', [t.queue_id]);
    expect(Number(q[0]!.active_attempts)).toBe(0);
    const [held] = await k.db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM resource_keys WHERE namespace_id = ? AND holder_attempt_id IS NOT NULL', [
      t.namespace_id,
    ]);
    expect(Number(held[0]!.n)).toBe(0);
    // The three started attempts (keyed and plain of wa, taken[0] of wb) went to review; the three
    // never-started ones wait again and finish normally on a fresh worker.
    const byState = async () => {
      const [r] = await k.db.pool.query<RowDataPacket[]>('SELECT state, COUNT(*) AS n FROM tasks WHERE namespace_id = ? GROUP BY state', [t.namespace_id]);
      return Object.fromEntries(r.map((x) => [x.state, Number(x.n)]));
    };
    expect(await byState()).toEqual({ WAITING: 3, NEEDS_REVIEW: 3 });
    const wc = await session(url(), t, { capacity: 4 });
    for (let i = 0; i < 3; i++) {
      const a = await wc.next('task.assign');
      await startAndFinish(wc, a.attempt_id);
    }
    expect(await byState()).toEqual({ SUCCEEDED: 3, NEEDS_REVIEW: 3 });
    await assertPermitInvariants(k.db.pool);
    wc.close();
    wa2.close();
  });
});
