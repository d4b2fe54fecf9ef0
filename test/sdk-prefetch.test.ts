// The Node SDK's prefetch (docs/worker-protocol.md, "Prefetch") against a real gateway process:
// at most `capacity` handlers run while `capacity + prefetch` attempts are held, waiting attempts
// run oldest first, keep their leases by renewal, are dropped unstarted when cancelled, still run
// when the worker pauses or closes; a lost running attempt frees its run slot at once, even if its
// handler ignores the abort; and the shared vectors of the option's validation.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OrbitError } from '@orbit/protocol/errors';
import { createClient, createWorker, type TaskContext, type Worker } from '../worker-sdk/index.js';
import { declaredCapacity, PREFETCH_PROBLEM } from '../worker-sdk/worker-options.js';
import { packageRoot } from '../server/paths.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { silent } from './support/sdk-worker.js';
import { sleep, waitFor } from './support/wait.js';

// A fast sweeper: a lease that is not renewed is expired within 100 ms of its end.
const f = useGatewayFixture({ gatewayEnv: { ORBIT_SWEEP_INTERVAL_MS: '100' } });
const workers: Worker[] = [];
const gates: (() => void)[] = [];
afterEach(async () => {
  for (const release of gates.splice(0)) release(); // a failed test's held handlers end too
  await Promise.all(workers.splice(0).map((w) => w.close({ timeoutMs: 2000 })));
});

const client = () => createClient({ url: f.gw.url, token: f.t.token });

async function newQueue(leaseSeconds = 30): Promise<string> {
  const r = await client().createQueue({ name: ikey('prefetch'), lease_seconds: leaseSeconds }, { idempotencyKey: ikey('q') });
  return r.queue.id;
}

async function submit(queueId: string, n: number): Promise<string> {
  const r = await client().submitTask(
    { queue_id: queueId, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: { n } },
    { idempotencyKey: ikey('task') },
  );
  return r.task.id;
}

function worker(queueId: string, capacity: number, prefetch: number, fn: (e: TaskContext) => unknown): Worker {
  const w = createWorker({ url: f.gw.url, token: f.t.token, queues: [queueId], capacity, prefetch, logger: silent, handlers: { h: fn } });
  workers.push(w);
  return w;
}

/** A handler's hold: the handlers of the first task wait on it until release(). */
function gate() {
  let release!: () => void;
  const opened = new Promise<void>((r) => (release = r));
  gates.push(release);
  return { opened, release };
}

const state = async (taskId: string) => (await client().getTask(taskId)).state;
const waitState = (taskId: string, s: string, ms = 15_000) => waitFor(`task ${taskId} ${s}`, async () => (await state(taskId)) === s, ms);

/** The queue's worker session as the gateway sees it (GET /v1/workers). */
async function gatewaySession(queueId: string): Promise<{ capacity: number; in_flight: number; draining: boolean } | undefined> {
  const r = await call(f.gw.url, 'GET', `/v1/workers?queue_id=${queueId}`, { token: f.t.token });
  if (r.status !== 200) throw new Error(`GET /v1/workers: ${r.status} ${r.text}`);
  return r.body.data.workers[0];
}
const sessionCapacity = async (queueId: string) => (await gatewaySession(queueId))?.capacity;

describe('prefetch against a real gateway', () => {
  it('capacity 2 + prefetch 3 on a backlog: at most 2 handlers at once, 5 attempts held, 5 declared', async () => {
    const q = await newQueue();
    const ids = await Promise.all(Array.from({ length: 40 }, (_, i) => submit(q, i)));
    let running = 0;
    let maxRunning = 0;
    let maxHeld = 0;
    let done = 0;
    const w = worker(q, 2, 3, async () => {
      maxRunning = Math.max(maxRunning, ++running);
      maxHeld = Math.max(maxHeld, w.inFlight);
      await sleep(40);
      running--;
      return { ok: true };
    });
    w.on('result', (r) => {
      if (r.taskState === 'SUCCEEDED') done++;
    });
    await w.ready;
    // The gateway's count (its own held attempts, LEASED or RUNNING) while the backlog drains. The
    // SDK's inFlight may pass 5 for a moment: it holds an attempt until it has read result.ok,
    // and the next grant can come in the same read.
    let gatewayMax = 0;
    for (;;) {
      const s = await gatewaySession(q);
      if (!s || done === ids.length) break;
      expect(s.capacity).toBe(5);
      gatewayMax = Math.max(gatewayMax, s.in_flight);
      await sleep(20);
    }
    await waitFor('every result', () => done === ids.length, 30_000);
    expect(maxRunning).toBe(2);
    expect(gatewayMax).toBe(5);
    expect(maxHeld).toBeGreaterThanOrEqual(5);
    for (const id of ids) expect(await state(id)).toBe('SUCCEEDED');
  });

  it('waiting attempts run oldest first', async () => {
    const q = await newQueue();
    const g = gate();
    const order: string[] = [];
    const w = worker(q, 1, 4, async (e) => {
      order.push(e.task.id);
      if (order.length === 1) await g.opened;
      return {};
    });
    await w.ready;
    const ids = [await submit(q, 0)];
    await waitFor('the first handler', () => order.length === 1);
    // One at a time, each held before the next is submitted: the assignment order is known.
    for (let i = 1; i <= 4; i++) {
      ids.push(await submit(q, i));
      await waitFor(`${i + 1} attempts held`, () => w.inFlight === i + 1);
    }
    expect(order).toHaveLength(1);
    g.release();
    for (const id of ids) await waitState(id, 'SUCCEEDED');
    expect(order).toEqual(ids);
  });

  it('a cancelled waiting attempt is dropped unstarted: no start, no handler', async () => {
    const q = await newQueue();
    const g = gate();
    const seen: string[] = [];
    const w = worker(q, 1, 1, async (e) => {
      seen.push(e.task.id);
      await g.opened;
      return {};
    });
    const lost: [string, string][] = [];
    w.on('leaseLost', (id, reason) => lost.push([id, reason]));
    await w.ready;
    const first = await submit(q, 0);
    await waitFor('the first handler', () => seen.length === 1);
    const second = await submit(q, 1);
    await waitFor('the second attempt held', () => w.inFlight === 2);
    const [attempt] = await client().getTaskAttempts(second);
    await client().cancelTask(second, { reason: 'test' }, { idempotencyKey: ikey('cancel') });
    await waitFor('the waiting attempt dropped', () => lost.length === 1 && w.inFlight === 1);
    expect(lost).toEqual([[attempt!.id, 'CANCELLED']]);
    g.release();
    await waitState(first, 'SUCCEEDED');
    expect(seen).toEqual([first]);
    expect(await state(second)).toBe('CANCELLED');
    const [after] = await client().getTaskAttempts(second);
    expect(after!.started_at).toBeNull();
  });

  // A RUNNING task cannot be cancelled by the API (409; docs/http-api.md): a running attempt is
  // lost by its lease's expiry (task.cancel LEASE_EXPIRED, or renew.ok's lost), here forced in the
  // database and swept within 100 ms.
  it('a lost running attempt whose handler ignores its abort frees its run slot at once (prefetch 0): the next task starts', async () => {
    const q = await newQueue();
    const g = gate(); // the first handler returns only when the test ends
    const seen: string[] = [];
    let firstReturned = false;
    const w = worker(q, 1, 0, async (e) => {
      seen.push(e.task.id);
      if (seen.length === 1) {
        await g.opened; // ignores e.signal
        firstReturned = true;
      }
      return {};
    });
    const lost: [string, string][] = [];
    w.on('leaseLost', (id, reason) => lost.push([id, reason]));
    await w.ready;
    const first = await submit(q, 0);
    await waitFor('the first handler', () => seen.length === 1);
    await waitState(first, 'RUNNING');
    const [attempt] = await client().getTaskAttempts(first);
    await f.db.pool.query('UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE id = ?', [attempt!.id]);
    await waitFor('the running attempt lost', () => lost.length === 1);
    expect(lost[0]![0]).toBe(attempt!.id);
    await waitState(first, 'NEEDS_REVIEW');
    // The gateway no longer counts the lost attempt and assigns the next task; the SDK starts it
    // although the first handler has not returned.
    const second = await submit(q, 1);
    await waitFor('the second handler', () => seen.length === 2, 5000);
    expect(seen).toEqual([first, second]);
    expect(firstReturned).toBe(false);
    await waitState(second, 'SUCCEEDED');
    g.release();
    await waitFor('the first handler returned', () => firstReturned && w.inFlight === 0);
    expect(await state(first)).toBe('NEEDS_REVIEW'); // its result is not sent
  });

  it("a waiting attempt's lease is renewed: it outlives a lease shortened under it", async () => {
    const q = await newQueue(5); // renew_ms ≈ 1.7 s
    const g = gate();
    const seen: { task: string; attempt: string }[] = [];
    const w = worker(q, 1, 1, async (e) => {
      seen.push({ task: e.task.id, attempt: e.attemptId });
      if (seen.length === 1) await g.opened;
      return {};
    });
    await w.ready;
    await submit(q, 0);
    await waitFor('the first handler', () => seen.length === 1);
    const second = await submit(q, 1);
    await waitFor('the second attempt held', () => w.inFlight === 2);
    const [attempt] = await client().getTaskAttempts(second);
    // 2.5 s left: more than one renew interval, so only a renewal keeps it past that.
    await f.db.pool.query('UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL 2500000 MICROSECOND WHERE id = ?', [attempt!.id]);
    const shortenedAt = Date.now();
    await waitFor(
      'the waiting lease renewed',
      async () => {
        const [rows] = await f.db.pool.query('SELECT lease_expires_at > UTC_TIMESTAMP(3) + INTERVAL 3 SECOND AS renewed FROM attempts WHERE id = ?', [
          attempt!.id,
        ]);
        return (rows as { renewed: number }[])[0]?.renewed === 1;
      },
      4000,
    );
    await sleep(Math.max(0, shortenedAt + 3000 - Date.now())); // past the shortened end, swept every 100 ms
    expect((await client().getAttempt(attempt!.id)).state).toBe('LEASED');
    g.release();
    await waitState(second, 'SUCCEEDED');
    expect(seen[1]).toEqual({ task: second, attempt: attempt!.id });
    expect(await client().getTaskAttempts(second)).toHaveLength(1);
  });

  it('paused (capacity 0): the waiting attempts still run one at a time, nothing new is granted', async () => {
    const q = await newQueue();
    const g = gate();
    const seen: string[] = [];
    let running = 0;
    let maxRunning = 0;
    const w = worker(q, 1, 2, async (e) => {
      seen.push(e.task.id);
      maxRunning = Math.max(maxRunning, ++running);
      if (seen.length === 1) await g.opened;
      await sleep(20);
      running--;
      return {};
    });
    await w.ready;
    const ids = [await submit(q, 0)];
    await waitFor('the first handler', () => seen.length === 1);
    for (let i = 1; i <= 2; i++) ids.push(await submit(q, i));
    await waitFor('3 attempts held', () => w.inFlight === 3);
    w.setCapacity(0);
    await waitFor('capacity 0 declared', async () => (await sessionCapacity(q)) === 0);
    const later = await submit(q, 3);
    g.release();
    for (const id of ids) await waitState(id, 'SUCCEEDED');
    expect(seen).toEqual(ids);
    expect(maxRunning).toBe(1);
    await sleep(500); // nothing new while paused
    expect(await state(later)).toBe('WAITING');
    w.setCapacity(1);
    await waitState(later, 'SUCCEEDED');
  });

  it('close() runs the waiting attempts before it closes', async () => {
    const q = await newQueue();
    const g = gate();
    const seen: string[] = [];
    const w = worker(q, 1, 2, async (e) => {
      seen.push(e.task.id);
      if (seen.length === 1) await g.opened;
      return {};
    });
    await w.ready;
    const ids = [await submit(q, 0)];
    await waitFor('the first handler', () => seen.length === 1);
    for (let i = 1; i <= 2; i++) ids.push(await submit(q, i));
    await waitFor('3 attempts held', () => w.inFlight === 3);
    const closed = w.close();
    await waitFor('the session draining', async () => (await gatewaySession(q))?.draining);
    g.release();
    await closed;
    expect(seen).toEqual(ids);
    for (const id of ids) expect(await state(id)).toBe('SUCCEEDED');
  });
});

interface PrefetchVector {
  name: string;
  capacity: number;
  prefetch: number;
  expect: { ok: true; declared: number } | { ok: false; code: string; message?: string };
}

describe('prefetch validation (protocol/vectors/worker-prefetch.json)', () => {
  const doc = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'protocol/vectors/worker-prefetch.json'), 'utf8')) as { vectors: PrefetchVector[] };
  const make = (capacity: number, prefetch: number) =>
    createWorker({ url: 'http://127.0.0.1:1', token: 't', queues: ['q'], capacity, prefetch, logger: silent, handlers: { h: () => ({}) } });

  for (const v of doc.vectors) {
    it(v.name, async () => {
      if (v.expect.ok) {
        const w = make(v.capacity, v.prefetch);
        await w.close({ timeoutMs: 0 });
        expect(declaredCapacity(v.capacity, v.prefetch)).toBe(v.expect.declared);
        return;
      }
      const err = (() => {
        try {
          make(v.capacity, v.prefetch);
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(OrbitError);
      expect((err as OrbitError).code).toBe(v.expect.code);
      if (v.expect.message) expect((err as OrbitError).message).toBe(v.expect.message);
    });
  }

  it('a prefetch that is not an integer is refused with the same message; setCapacity checks the sum', async () => {
    for (const p of [1.5, Number.NaN]) expect(() => make(1, p)).toThrow(PREFETCH_PROBLEM);
    const w = make(24, 1000);
    expect(() => w.setCapacity(25)).toThrow(new OrbitError('INVALID_ARGUMENT', PREFETCH_PROBLEM));
    w.setCapacity(0);
    w.setCapacity(24);
    await w.close({ timeoutMs: 0 });
  });
});
