// Frames sent to one socket in one turn of the event loop go out in one socket write, on both
// sides of a worker session: the gateway (server/gateway/worker-socket.ts batchWrites,
// counted by orbit_worker_frames_sent_total / orbit_worker_socket_flushes_total) and the SDK
// (worker-sdk/batched-socket.ts). Each frame stays its own WebSocket message, in order, and every
// request still gets its own reply.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { useGatewayFixture } from './support/fixture.js';
import { hello, openRaw, type RawWorker } from './support/raw-worker.js';
import { submitMany, taskBodies } from './support/bulk.js';
import { metric } from './support/keys-helpers.js';
import { createWorker, type Worker } from '../worker-sdk/index.js';
import { silent } from './support/sdk-worker.js';

// No heartbeat ping in the middle of a test: the only pings are the ones sent with assignments.
const f = useGatewayFixture({ queues: ['raw', 'raw2', 'sdk'], gatewayEnv: { ORBIT_PING_INTERVAL_MS: '600000' } });
const raws: RawWorker[] = [];
const workers: Worker[] = [];

afterEach(async () => {
  for (const w of raws.splice(0)) w.close();
  await Promise.all(workers.splice(0).map((w) => w.close({ timeoutMs: 2000 })));
});

const sent = async () => ({
  frames: await metric(f.gw.url, 'orbit_worker_frames_sent_total'),
  flushes: await metric(f.gw.url, 'orbit_worker_socket_flushes_total'),
});

describe('gateway → worker', () => {
  it('a claim round’s assignments and their ping leave in one socket write; the worker reads them as distinct messages in order', async () => {
    const n = 8;
    const ids = await submitMany(f.gw.url, f.t.token, taskBodies(f.t.queues.raw!, n));
    const before = await sent();
    const w = await openRaw(f.gw.url, f.t.token);
    raws.push(w);
    const pings: string[] = [];
    w.ws.on('ping', (d) => pings.push(d.toString()));
    w.send(hello([f.t.queues.raw!], { capacity: n }));
    await w.next('hello.ok');
    const assigns = [];
    for (let i = 0; i < n; i++) assigns.push(await w.next('task.assign'));
    const after = await sent();
    // Distinct, well-formed messages: every task once, each attempt once.
    expect(new Set(assigns.map((a) => a.task.id))).toEqual(new Set(ids));
    expect(new Set(assigns.map((a) => a.attempt_id)).size).toBe(n);
    expect(pings.length).toBe(1);
    // hello.ok (one turn), then the round's ping and n assignments (one turn): n + 2 frames in two
    // writes, where one write per frame would be n + 2.
    expect(after.frames - before.frames).toBe(n + 2);
    expect(after.flushes - before.flushes).toBe(2);
  });

  it('replies committed together share a write; every request gets its own reply', async () => {
    const n = 6;
    await submitMany(f.gw.url, f.t.token, taskBodies(f.t.queues.raw2!, n));
    const w = await openRaw(f.gw.url, f.t.token);
    raws.push(w);
    w.send(hello([f.t.queues.raw2!], { capacity: n }));
    await w.next('hello.ok');
    const assigns = [];
    for (let i = 0; i < n; i++) assigns.push(await w.next('task.assign'));
    // Two starts of each attempt in one burst: the gateway answers each of them, in order.
    for (const a of assigns) w.send({ type: 'start', attempt_id: a.attempt_id });
    for (const a of assigns) w.send({ type: 'start', attempt_id: a.attempt_id });
    const oks = [];
    for (let i = 0; i < 2 * n; i++) oks.push(await w.next('start.ok'));
    for (const a of assigns) expect(oks.filter((o) => o.attempt_id === a.attempt_id)).toHaveLength(2);
    const before = await sent();
    for (const a of assigns) w.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded', output: { id: a.attempt_id } });
    const replies = [];
    for (let i = 0; i < n; i++) replies.push(await w.next('result.ok'));
    const after = await sent();
    expect(replies.map((r) => r.task_state)).toEqual(Array(n).fill('SUCCEEDED'));
    expect(new Set(replies.map((r) => r.attempt_id))).toEqual(new Set(assigns.map((a) => a.attempt_id)));
    // The results commit in at most a few batches (group commit, two at a time): fewer writes
    // than replies.
    expect(after.frames - before.frames).toBe(n);
    expect(after.flushes - before.flushes).toBeLessThan(n);
  });
});

/** Socket writes (the Writable implementation's _write/_writev calls, one write(2)/writev(2) each)
 * of this process's sockets to `port`, while `fn` runs. */
async function countWrites<T>(port: number, fn: () => Promise<T>): Promise<{ writes: number; value: T }> {
  const proto = net.Socket.prototype as unknown as Record<'_write' | '_writev', (...a: unknown[]) => unknown>;
  const orig = { _write: proto._write, _writev: proto._writev };
  let writes = 0;
  for (const k of ['_write', '_writev'] as const) {
    proto[k] = function (this: net.Socket, ...a: unknown[]) {
      if (this.remotePort === port) writes++;
      return orig[k].apply(this, a);
    };
  }
  try {
    const value = await fn();
    return { writes, value };
  } finally {
    Object.assign(proto, orig);
  }
}

describe('SDK → gateway', () => {
  it('a worker sends the starts and the results of a batch of tasks in few writes, and every result gets its reply', async () => {
    const n = 16;
    const ids = await submitMany(f.gw.url, f.t.token, taskBodies(f.t.queues.sdk!, n));
    const port = Number(new URL(f.gw.url).port);
    const results: { attemptId: string; taskState: string; deduplicated: boolean }[] = [];
    const ran: string[] = [];
    const { writes } = await countWrites(port, async () => {
      const w = createWorker({
        url: f.gw.url,
        token: f.t.token,
        queues: [f.t.queues.sdk!],
        capacity: n,
        logger: silent,
        handlers: { h: async (e) => (ran.push(e.task.id), { i: e.task.payload }) },
      });
      workers.push(w);
      w.on('result', (r) => results.push(r as (typeof results)[number]));
      await w.ready;
      await new Promise<void>((resolve) => {
        const check = () => (results.length === n ? resolve() : setTimeout(check, 10));
        check();
      });
    });
    expect(new Set(ran)).toEqual(new Set(ids));
    expect(results.every((r) => r.taskState === 'SUCCEEDED' && !r.deduplicated)).toBe(true);
    expect(new Set(results.map((r) => r.attemptId)).size).toBe(n);
    // The worker sent hello, n starts, n results and a pong per ping: 2n + 2 or more frames. One
    // write per frame would be that many; the assignments come in one write, so their starts leave
    // in one, and the results in as many as the starts' replies came in.
    expect(writes, `${writes} writes`).toBeLessThan(n);
  });
});
