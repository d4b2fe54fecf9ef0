// createWorker behaviour against the in-process fake gateway: outcomes, renewal, cancel, lost
// leases, reconnect + resume, re-sent results, goaway, draining close, fatal hello errors.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWorker, LeaseLostError, PermanentError, RetryableError, UnknownOutcomeError, type TaskContext, type Worker } from '../worker-sdk/index.js';
import { FakeGateway, hexId, type FakeGatewayOptions } from '../worker-sdk/testing.js';
import { FAST, sleep, waitFor } from './support/wait.js';
import { silent } from './support/sdk-worker.js';

let gw: FakeGateway;
const workers: Worker[] = [];

async function gateway(opts: FakeGatewayOptions = {}) {
  gw = await FakeGateway.start(opts);
  return gw;
}
beforeEach(async () => {
  await gateway({ autoStart: true, autoResult: true });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close({ timeoutMs: 1000 })));
  await gw.close();
});

function worker(fn: (e: TaskContext) => unknown) {
  const w = createWorker({
    url: gw.url,
    token: 't',
    queues: [hexId()],
    capacity: 2,
    handlers: { 'object.update': fn },
    logger: silent,
    reconnect: { initialDelayMs: 10, maxDelayMs: 50 },
  });
  workers.push(w);
  return w;
}

describe('outcomes', () => {
  const cases: [string, () => unknown, object][] = [
    ['return value → succeeded', () => ({ n: 1 }), { outcome: 'succeeded', output: { n: 1 } }],
    [
      'RetryableError → retry',
      () => {
        throw new RetryableError('upstream 503', { retryAfterMs: 5000, code: 'UPSTREAM_503' });
      },
      { outcome: 'retry', error: { code: 'UPSTREAM_503', message: 'upstream 503' }, retry_after_ms: 5000 },
    ],
    [
      'UnknownOutcomeError → unknown',
      () => {
        throw new UnknownOutcomeError('timed out after send');
      },
      { outcome: 'unknown', error: { code: 'UNKNOWN_OUTCOME', message: 'timed out after send' } },
    ],
    [
      'PermanentError → failed',
      () => {
        throw new PermanentError('bad payload', { code: 'BAD_PAYLOAD' });
      },
      { outcome: 'failed', error: { code: 'BAD_PAYLOAD', message: 'bad payload' } },
    ],
    [
      'any other throw → failed',
      async () => {
        throw new Error('boom');
      },
      { outcome: 'failed', error: { code: 'HANDLER_ERROR', message: 'boom' } },
    ],
    ['output over 256 KiB → failed', () => ({ big: 'x'.repeat(300 * 1024) }), { outcome: 'failed', error: { code: 'OUTPUT_TOO_LARGE' } }],
  ];
  for (const [name, fn, expected] of cases) {
    it(name, async () => {
      const w = worker(fn);
      const s = await gw.nextSession();
      await w.ready;
      const f = s.assign({});
      const r = await s.next('result');
      expect(r).toMatchObject({ type: 'result', attempt_id: f.attempt_id, ...expected });
      await waitFor('no task in flight', () => w.inFlight === 0, FAST);
      expect(s.invalid).toEqual([]);
    });
  }

  it('a result frame the SDK refuses to send (over the session max_frame_bytes) → failed RESULT_REJECTED', async () => {
    await gw.close();
    await gateway({ autoStart: true, autoResult: true, autoHelloOk: false });
    const w = worker(() => ({ text: 'x'.repeat(8192) }));
    const s = await gw.nextSession();
    s.helloOk({ max_frame_bytes: 4096 });
    await w.ready;
    const f = s.assign({});
    expect(await s.next('result')).toMatchObject({ type: 'result', attempt_id: f.attempt_id, outcome: 'failed', error: { code: 'RESULT_REJECTED' } });
    expect(s.invalid).toEqual([]);
  });

  it('an unknown handler is failed without start', async () => {
    const w = worker(() => null);
    const s = await gw.nextSession();
    await w.ready;
    s.assign({ handler: 'other.thing' });
    expect(await s.next()).toMatchObject({ type: 'result', outcome: 'failed', error: { code: 'HANDLER_NOT_FOUND' } });
  });
});

describe('leases', () => {
  it('renews every renew_ms with one frame for all held attempts', async () => {
    await gw.close();
    await gateway({ autoStart: true, autoResult: true, renewMs: 40 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const w = worker(() => gate);
    const s = await gw.nextSession();
    await w.ready;
    const a = s.assign({ key: 'k1', token: '1' });
    const b = s.assign({ key: 'k2', token: '2' });
    await waitFor('two starts', () => s.received.filter((f) => f.type === 'start').length === 2, FAST);
    await waitFor('a renew of both', () => s.received.some((f) => f.type === 'renew' && f.attempt_ids.length === 2), FAST);
    const renew = s.received.find((f) => f.type === 'renew' && f.attempt_ids.length === 2)!;
    expect(renew).toMatchObject({ attempt_ids: expect.arrayContaining([a.attempt_id, b.attempt_id]) });
    release();
    await waitFor('no task in flight', () => w.inFlight === 0, FAST);
    const renewsAfter = s.received.filter((f) => f.type === 'renew').length;
    await sleep(150);
    expect(s.received.filter((f) => f.type === 'renew').length).toBe(renewsAfter); // idle: no renewals
  });

  it('a lease reported lost by renew.ok aborts the handler and sends no result', async () => {
    await gw.close();
    await gateway({ autoStart: true, autoResult: true, renewMs: 30 });
    let reason: unknown;
    const w = worker(async (e) => {
      await new Promise((r) => e.signal.addEventListener('abort', r));
      reason = e.signal.reason;
      return 'late';
    });
    const s = await gw.nextSession();
    await w.ready;
    const f = s.assign({});
    await s.next('start');
    gw.leases.delete(f.attempt_id); // the next renew.ok lists it in `lost`
    await waitFor('no task in flight', () => w.inFlight === 0, FAST);
    expect(reason).toBeInstanceOf(LeaseLostError);
    await sleep(50);
    expect(s.received.some((x) => x.type === 'result')).toBe(false);
  });

  it('task.cancel fires the AbortSignal', async () => {
    const w = worker(async (e) => {
      await new Promise((r) => e.signal.addEventListener('abort', r));
      throw e.signal.reason;
    });
    const s = await gw.nextSession();
    await w.ready;
    const f = s.assign({});
    await s.next('start');
    s.send({ type: 'task.cancel', attempt_id: f.attempt_id, reason: 'CANCELLED' });
    await waitFor('no task in flight', () => w.inFlight === 0, FAST);
    expect(s.received.some((x) => x.type === 'result')).toBe(false);
  });

  it('a cancel before the handler first reads e.signal: the signal it then gets is already aborted', async () => {
    // The AbortController is made on the first read of e.signal (held-attempts.ts).
    let cancelled!: () => void;
    const cancelSeen = new Promise<void>((r) => (cancelled = r));
    let seen: { aborted: boolean; reason: unknown } | undefined;
    let entered = false;
    const w = worker(async (e) => {
      entered = true;
      await cancelSeen;
      seen = { aborted: e.signal.aborted, reason: e.signal.reason };
      throw e.signal.reason;
    });
    w.on('leaseLost', () => cancelled());
    const s = await gw.nextSession();
    await w.ready;
    const f = s.assign({});
    await s.next('start');
    await waitFor('the handler running', () => entered, FAST);
    s.send({ type: 'task.cancel', attempt_id: f.attempt_id, reason: 'CANCELLED' });
    await waitFor('no task in flight', () => w.inFlight === 0, FAST);
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBeInstanceOf(LeaseLostError);
    expect(s.received.some((x) => x.type === 'result')).toBe(false);
  });
});

describe('reconnect and resume', () => {
  it('a dropped socket reconnects with the same worker_id, resumes, and reports on the new session', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let token: bigint | undefined;
    const w = worker(async (e) => {
      await gate;
      token = e.concurrencyToken;
      return { done: true };
    });
    const s1 = await gw.nextSession();
    await w.ready;
    const f = s1.assign({ key: 'obj', token: '41' });
    await s1.next('start');
    s1.ws.terminate();
    const s2 = await gw.nextSession();
    expect(s2.hello.worker_id).toBe(s1.hello.worker_id);
    expect(s2.hello.resume).toEqual([f.attempt_id]);
    expect(s2.hello.concurrency_keys).toBe(true);
    release();
    expect(await s2.next('result')).toMatchObject({ attempt_id: f.attempt_id, outcome: 'succeeded', output: { done: true } });
    expect(token).toBe(41n);
  });

  it('an unacknowledged result is re-sent after reconnect (and the dedupe ack ends it)', async () => {
    await gw.close();
    await gateway({ autoStart: true });
    const results: { deduplicated?: boolean }[] = [];
    const w = worker(() => ({ v: 1 }));
    w.on('result', (r) => results.push(r));
    const s1 = await gw.nextSession();
    await w.ready;
    const f = s1.assign({});
    const first = await s1.next('result');
    gw.leases.delete(f.attempt_id); // the gateway committed it, but the ack never arrives
    s1.ws.terminate();
    const s2 = await gw.nextSession();
    expect(s2.hello.resume).toEqual([f.attempt_id]);
    const again = await s2.next('result'); // resume said `lost`, yet the result is re-sent
    expect(again).toEqual(first);
    s2.send({ type: 'result.ok', attempt_id: f.attempt_id, deduplicated: true, task_state: 'SUCCEEDED' });
    await waitFor('no task in flight', () => w.inFlight === 0, FAST);
    expect(results).toMatchObject([{ deduplicated: true }]);
  });

  it('attempts lost on resume abort their handlers', async () => {
    let aborted = false;
    const w = worker(async (e) => {
      await new Promise((r) => e.signal.addEventListener('abort', r));
      aborted = true;
    });
    const s1 = await gw.nextSession();
    await w.ready;
    const f = s1.assign({});
    await s1.next('start');
    gw.leases.delete(f.attempt_id);
    s1.ws.terminate();
    const s2 = await gw.nextSession();
    expect(s2.hello.resume).toEqual([f.attempt_id]);
    await waitFor('the abort', () => aborted && w.inFlight === 0, FAST);
  });

  it('goaway reconnects at once and resumes', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const w = worker(() => gate);
    const s1 = await gw.nextSession();
    await w.ready;
    const f = s1.assign({});
    await s1.next('start');
    s1.send({ type: 'goaway', reason: 'node shutting down' });
    expect((await s1.closed).code).toBe(1000);
    const s2 = await gw.nextSession();
    expect(s2.hello.resume).toEqual([f.attempt_id]);
    release();
    expect(await s2.next('result')).toMatchObject({ attempt_id: f.attempt_id });
  });
});

describe('close and fatal errors', () => {
  it('close() drains: drain, waits for the handler and result.ok, then closes 1000', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const w = worker(() => gate.then(() => 'ok'));
    const s = await gw.nextSession();
    await w.ready;
    const f = s.assign({});
    await s.next('start');
    let closed = false;
    const closing = w.close().then(() => (closed = true));
    await s.next('drain');
    await sleep(50);
    expect(closed).toBe(false);
    release();
    await closing;
    expect(s.received.map((x) => x.type)).toEqual(['start', 'drain', 'result']);
    expect(gw.results.get(f.attempt_id)).toMatchObject({ outcome: 'succeeded', output: 'ok' });
    expect((await s.closed).code).toBe(1000);
  });

  it('a fatal hello error stops the worker', async () => {
    await gw.close();
    await gateway({ autoHelloOk: false });
    const w = worker(() => null);
    const fatal: Error[] = [];
    w.on('fatal', (e) => fatal.push(e));
    const s = await gw.nextSession();
    s.send({ type: 'error', code: 'RESOURCE_RETIRED', message: 'queue retired', fatal: true });
    s.close(1008, 'retired');
    await expect(w.ready).rejects.toMatchObject({ code: 'RESOURCE_RETIRED' });
    expect(fatal).toHaveLength(1);
    await sleep(100);
    expect(gw.sessions).toHaveLength(1); // no reconnect loop
  });
});
