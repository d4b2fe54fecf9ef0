// Retry of what the database refuses (docs/design.md "Refused transactions: retries and isolation"): a deadlock or Galera certification failure
// (1213) or a lock wait timeout (1205) on any transaction path — HTTP command, submit, hello, frame
// batch, claim round, sweeper, schedule fire — is retried by transactionOn, and one that outlasts
// the retries is answered UNAVAILABLE (503, or close 1001 for a session), never INTERNAL. The fault
// gateway (bench/fault-gateway.ts) makes the next n transactions of a path fail with that real
// server error (SIGNAL, sent by its tapped pool: bench/pool-tap.ts).
import { afterEach, describe, expect, it } from 'vitest';
import { useGatewayFixture } from './support/fixture.js';
import { failTransactions, FAULT_GATEWAY } from './support/faults.js';
import { call, ikey } from './support/http.js';
import { hello, openRaw } from './support/raw-worker.js';
import { closeWorkers, connect, createQueue, expireLease, result, start, submit } from './support/dispatch-fixture.js';
import { assertPermitInvariants } from './support/invariants.js';
import { backdate, fireRecords, newSchedule } from './support/schedules.js';
import { waitFor } from './support/wait.js';

const f = useGatewayFixture({ script: FAULT_GATEWAY });
afterEach(async () => {
  for (const path of ['command', 'submit', 'frames', 'claim', 'sweep', 'hello', 'fire']) await arm(path, 1213, 0);
  closeWorkers(f);
  await assertPermitInvariants(f.db.pool);
});

/** The next `n` transactions of `path` fail with `errno`. */
const arm = (path: string, errno: number, n: number) => failTransactions(f.gw, path, errno, n);

async function internalErrors(): Promise<number> {
  const text = (await call(f.gw.url, 'GET', '/metrics')).text;
  return [...text.matchAll(/^orbit_internal_errors_total\{[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

/** Two failures then success: fewer than TRANSACTION_TRIES (8). */
const TWICE = 2;
/** More failures than every retry of a path together (a coalesced try and a serialized one). */
const ALWAYS = 40;

describe('a refused transaction is retried on every path', () => {
  it('HTTP command and submit: 1213 / 1205 twice → 201; persistent → 503 UNAVAILABLE, then the same key succeeds', async () => {
    const before = await internalErrors();
    const key = ikey('q');
    const body = { name: `retry-${process.pid}`, lease_seconds: 5 };
    await arm('command', 1213, ALWAYS);
    let r = await call(f.gw.url, 'POST', '/v1/queues', { token: f.t.token, key, body });
    expect(r.status, r.text).toBe(503);
    expect(r.body.error.code).toBe('UNAVAILABLE');
    await arm('command', 1205, TWICE);
    r = await call(f.gw.url, 'POST', '/v1/queues', { token: f.t.token, key, body });
    expect(r.status, r.text).toBe(201);
    const q = r.body.data.queue;

    const task = { queue_id: q.id, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: {} };
    const tkey = ikey('t');
    await arm('submit', 1205, ALWAYS);
    r = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: tkey, body: task });
    expect(r.status, r.text).toBe(503);
    expect(r.body.error.code).toBe('UNAVAILABLE');
    await arm('submit', 1213, TWICE);
    r = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: tkey, body: task });
    expect(r.status, r.text).toBe(201);
    expect(await internalErrors()).toBe(before);
  });

  it('hello, claim round, start and result frames: 1213 twice each → the session works as usual', async () => {
    const before = await internalErrors();
    const q = await createQueue(f);
    await arm('hello', 1213, TWICE);
    const { w } = await connect(f, [q.id], { capacity: 1 });
    await arm('claim', 1213, TWICE);
    const task = await submit(f, q.id);
    const assign = await w.next('task.assign');
    expect(assign.task.id).toBe(task.id);
    await arm('frames', 1205, TWICE);
    await start(w, assign.attempt_id);
    await arm('frames', 1213, TWICE);
    expect(await result(w, assign.attempt_id, 'succeeded')).toMatchObject({ type: 'result.ok', task_state: 'SUCCEEDED' });
    expect(await internalErrors()).toBe(before);
  });

  it('a frame batch refused past its retries closes the session UNAVAILABLE 1001 (not 1011); the result sent again is accepted', async () => {
    const before = await internalErrors();
    const q = await createQueue(f);
    const { w, workerId } = await connect(f, [q.id], { capacity: 1 });
    await submit(f, q.id);
    const assign = await w.next('task.assign');
    await start(w, assign.attempt_id);
    await arm('frames', 1213, ALWAYS);
    w.send({ type: 'result', attempt_id: assign.attempt_id, outcome: 'succeeded' });
    expect(await w.next('error')).toMatchObject({ code: 'UNAVAILABLE', fatal: true });
    expect((await w.closed).code).toBe(1001);
    await arm('frames', 1213, 0);
    const again = await openRaw(f.gw.url, f.t.token);
    f.workers.push(again);
    again.send(hello([q.id], { worker_id: workerId, capacity: 1, resume: [assign.attempt_id] }));
    expect((await again.next('hello.ok')).resumed.map((x: any) => x.attempt_id)).toEqual([assign.attempt_id]);
    expect(await result(again, assign.attempt_id, 'succeeded')).toMatchObject({ type: 'result.ok', task_state: 'SUCCEEDED' });
    expect(await internalErrors()).toBe(before);
  });

  it('sweeper and schedule fire: 1205 / 1213 twice → the expired lease is recovered and the fire is recorded', async () => {
    const before = await internalErrors();
    const q = await createQueue(f);
    const { w } = await connect(f, [q.id], { capacity: 1 });
    await submit(f, q.id);
    const assign = await w.next('task.assign');
    await arm('sweep', 1205, TWICE);
    await expireLease(f, assign.attempt_id);
    expect(await w.next('task.cancel', 10_000)).toMatchObject({ attempt_id: assign.attempt_id, reason: 'LEASE_EXPIRED' });

    const { schedule } = await newSchedule({ url: f.gw.url, token: f.t.token }, q.id);
    await arm('fire', 1213, TWICE);
    await backdate(f.db.pool, schedule.id, 3_600_000, 1);
    const fires = await waitFor(
      'the missed fire recorded',
      async () => {
        const r = await fireRecords(f.db.pool, schedule.id);
        return r.length > 0 && r;
      },
      10_000,
    );
    expect(fires[0]!.outcome).toBe('created');
    expect(await internalErrors()).toBe(before);
  });
});
