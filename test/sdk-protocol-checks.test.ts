// The SDK's own protocol checks (docs/worker-protocol.md, "What an SDK must refuse"), against an
// in-process hostile gateway (worker-sdk/testing.ts, a raw `ws` server). No real gateway needed.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { connect, createWorker, ProtocolViolation, type TaskContext, type Worker } from '../worker-sdk/index.js';
import { FakeGateway, assignFrame, hexId, type AssignOptions, type FakeSession } from '../worker-sdk/testing.js';
import { FAST, waitFor } from './support/wait.js';
import { silent } from './support/sdk-worker.js';

let gw: FakeGateway;
const workers: Worker[] = [];

beforeEach(async () => {
  gw = await FakeGateway.start({ token: 'secret-token' });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close({ timeoutMs: 1000 })));
  await gw.close();
});

function worker(handler: (e: TaskContext) => unknown, extra: { queues?: string[] } = {}) {
  const w = createWorker({
    url: gw.url,
    token: 'secret-token',
    queues: extra.queues ?? [hexId()],
    capacity: 4,
    handlers: { 'object.update': { versions: ['v1'], fn: handler } },
    logger: silent,
    reconnect: { initialDelayMs: 20, maxDelayMs: 100 },
  });
  workers.push(w);
  return w;
}

/** A worker whose handler only counts its calls, collecting its protocol violations; returns it
 * with its first session (ready). */
async function countingWorker(): Promise<{ w: Worker; s: FakeSession; violations: ProtocolViolation[]; calls: () => number }> {
  let calls = 0;
  const w = worker(() => {
    calls++;
  });
  const violations: ProtocolViolation[] = [];
  w.on('protocolError', (v) => violations.push(v));
  const s = await gw.nextSession();
  await w.ready;
  return { w, s, violations, calls: () => calls };
}

const MAX = '18446744073709551615';
const badVariants: [string, AssignOptions][] = [
  ['a key but no token', { key: 'object/42' }],
  ['a token but no key', { token: '7' }],
  ['token "0"', { key: 'object/42', token: '0' }],
  ['token 2^64 (over uint64)', { key: 'object/42', token: '18446744073709551616' }],
  ['token with a leading zero', { key: 'object/42', token: '007' }],
  ['negative token', { key: 'object/42', token: '-1' }],
  ['float token', { key: 'object/42', token: '1.5' }],
  ['exponent token', { key: 'object/42', token: '1e3' }],
  ['empty token', { key: 'object/42', token: '' }],
  ['empty key', { key: '', token: '3' }],
];

describe('handshake', () => {
  it('connects with the subprotocol and Bearer header and declares concurrency_keys', async () => {
    const w = worker(() => null);
    const s = await gw.nextSession();
    await w.ready;
    expect(s.ws.protocol).toBe('orbit.worker.v1');
    expect(s.authorization).toBe('Bearer secret-token');
    expect(s.hello.protocol).toBe(1);
    expect(s.hello.concurrency_keys).toBe(true);
    expect(s.hello.worker_id).toMatch(/^[A-Za-z0-9._:-]{1,64}$/);
    expect(s.hello.worker_id).toBe(w.workerId);
    expect(s.hello.handlers).toEqual([{ handler: 'object.update', versions: ['v1'] }]);
    expect(s.hello.capacity).toBe(4);
    expect(s.hello.resume).toBeUndefined();
  });

  it('gives each worker a fresh worker_id', () => {
    const a = worker(() => null);
    const b = worker(() => null);
    expect(a.workerId).not.toBe(b.workerId);
  });

  it('the low-level API refuses a registration without an explicit concurrencyKeys', async () => {
    const registration = { workerId: 'w-1', queues: [hexId()], capacity: 1 } as never;
    await expect(connect({ url: gw.url, token: 'secret-token', registration })).rejects.toThrow(/concurrencyKeys/);
  });

  it('a refused handshake surfaces the error code and status', async () => {
    const p = connect({ url: gw.url, token: 'wrong', registration: { workerId: 'w-1', queues: [hexId()], capacity: 1, concurrencyKeys: true } });
    await expect(p).rejects.toMatchObject({ name: 'GatewayError', code: 'UNAUTHENTICATED', status: 401 });
  });
});

describe('bad task.assign → close 1002, protocol error, handler never runs', () => {
  for (const [name, variant] of badVariants) {
    it(name, async () => {
      const { s, violations, calls } = await countingWorker();
      const f = s.assign({ ...variant, register: false });
      const closed = await s.closed;
      expect(closed.code).toBe(1002);
      expect(violations).toHaveLength(1);
      expect(violations[0]).toBeInstanceOf(ProtocolViolation);
      expect(violations[0]!.attemptId).toBe(f.attempt_id);
      // The worker reconnects; the offending attempt was never accepted, so it is not resumed.
      const s2 = await gw.nextSession();
      expect(s2.hello.resume).toBeUndefined();
      await new Promise((r) => setTimeout(r, 50)); // absence: the handler is not called late
      expect(calls()).toBe(0);
      expect(s.received.filter((x) => x.type === 'start' || x.type === 'result')).toEqual([]);
      expect(s.invalid).toEqual([]);
    });
  }

  for (const change of ['token', 'key'] as const) {
    it(`a repeated task.assign with a different ${change}`, async () => {
      const { w, s, violations, calls } = await countingWorker();
      const first = s.assign({ key: 'object/42', token: '5' });
      expect(await s.next('start')).toEqual({ type: 'start', attempt_id: first.attempt_id });
      // No start.ok yet; the gateway re-sends the same attempt with a changed key or token.
      s.send({
        ...first,
        concurrency_token: change === 'token' ? '6' : '5',
        task: { ...first.task, concurrency_key: change === 'key' ? 'object/43' : 'object/42' },
      });
      expect((await s.closed).code).toBe(1002);
      expect(violations.map((v) => v.attemptId)).toEqual([first.attempt_id]);
      // The first (valid) assign is still held: it is resumed on the next session.
      const s2 = await gw.nextSession();
      expect(s2.hello.resume).toEqual([first.attempt_id]);
      expect(s2.hello.worker_id).toBe(s.hello.worker_id);
      expect(await s2.next('start')).toEqual({ type: 'start', attempt_id: first.attempt_id });
      s2.send({ type: 'error', code: 'LEASE_LOST', message: 'gone', attempt_id: first.attempt_id, fatal: false });
      await waitFor('no task in flight', () => w.inFlight === 0, FAST);
      await new Promise((r) => setTimeout(r, 50)); // absence: the handler is not called late
      expect(calls()).toBe(0);
    });
  }

  it('a keyed task on a session that did not declare concurrency_keys (low-level API)', async () => {
    const conn = await connect({
      url: gw.url,
      token: 'secret-token',
      registration: { workerId: 'w-nokeys', queues: [hexId()], capacity: 1, concurrencyKeys: false },
    });
    const s = await gw.nextSession();
    expect(s.hello.concurrency_keys).toBe(false);
    const seen: string[] = [];
    conn.on('assign', () => seen.push('assign'));
    conn.on('protocolError', (v) => seen.push(`violation:${v.message}`));
    s.assign({}); // unkeyed: fine
    s.assign({ key: 'object/1', token: '9' });
    expect((await s.closed).code).toBe(1002);
    await vi.waitFor(() => expect(seen).toEqual(['assign', 'violation:keyed task assigned to a session that did not declare concurrency_keys']), {
      timeout: 5000,
      interval: 10,
    });
    expect(seen).toEqual(['assign', 'violation:keyed task assigned to a session that did not declare concurrency_keys']);
  });

  it('the idle timeout restarts with every frame (the one timer re-armed) and fires once the gateway goes silent', async () => {
    const conn = await connect({
      url: gw.url,
      token: 'secret-token',
      idleTimeoutMs: 400,
      registration: { workerId: 'w-idle', queues: [hexId()], capacity: 1, concurrencyKeys: true },
    });
    const s = await gw.nextSession();
    // Frames every 100 ms for three times the timeout: the session stays open.
    for (let i = 0; i < 12; i++) {
      await new Promise((r) => setTimeout(r, 100));
      s.ws.ping();
    }
    expect(conn.isOpen).toBe(true);
    // Silence: the worker ends the session itself (terminate: 1006) with the idle reason.
    const closed = await Promise.race([s.closed, new Promise<null>((r) => setTimeout(() => r(null), 5000))]);
    expect(closed?.code).toBe(1006);
    await conn.whenClosed;
    expect(conn.isOpen).toBe(false);
  });

  it('schema-invalid frames and binary frames', async () => {
    const cases: [string | Buffer, number][] = [
      ['not json', 1002],
      [JSON.stringify({ type: 'task.explode' }), 1002],
      [JSON.stringify({ ...assignFrame(), extra: 1 }), 1002],
      [JSON.stringify({ ...assignFrame(), attempt_id: 'short' }), 1002],
      [Buffer.from('{}'), 1003],
    ];
    for (const [data, code] of cases) {
      const conn = await connect({
        url: gw.url,
        token: 'secret-token',
        registration: { workerId: 'w-x', queues: [hexId()], capacity: 1, concurrencyKeys: true },
      });
      const s = await gw.nextSession();
      const types: string[] = [];
      conn.on('protocolError', () => types.push('protocolError'));
      conn.on('close', (c) => types.push(`close ${c}`));
      if (typeof data === 'string') s.send(data);
      else s.ws.send(data, { binary: true });
      expect((await s.closed).code).toBe(code);
      await conn.whenClosed;
      expect(types).toEqual(['protocolError', `close ${code}`]);
    }
  });

  it('a resume that changes an attempt token is a protocol error', async () => {
    let calls = 0;
    const w = worker(async (e) => {
      calls++;
      await new Promise((r) => e.signal.addEventListener('abort', r));
    });
    const violations: ProtocolViolation[] = [];
    w.on('protocolError', (v) => violations.push(v));
    const s = await gw.nextSession();
    const f = s.assign({ key: 'k', token: '10' });
    await s.next('start');
    s.close(1001, 'bye');
    const s2 = await gw.nextSession();
    expect(s2.hello.resume).toEqual([f.attempt_id]);
    // autoHelloOk already answered with the registered token; answer a third session wrongly.
    gw.leases.set(f.attempt_id, { token: '11', state: 'LEASED' });
    s2.close(1001, 'bye');
    const s3 = await gw.nextSession();
    expect((await s3.closed).code).toBe(1002);
    await waitFor('a violation', () => violations.length > 0, FAST);
    expect(violations.at(-1)?.message).toMatch(/resume changed the concurrency_token/);
    expect(calls).toBe(0);
  });
});

describe('valid keyed assign', () => {
  it('gives the token as an exact bigint; start before the handler, result after', async () => {
    const log: string[] = [];
    let ctx: TaskContext | undefined;
    const w = worker(async (e) => {
      log.push('handler');
      ctx = e;
      return { wrote: true };
    });
    const s = await gw.nextSession();
    await w.ready;
    const f = s.assign({ key: 'object/42', token: MAX, payload: { n: 1 } });
    const start = await s.next('start');
    log.push('start');
    expect(start).toEqual({ type: 'start', attempt_id: f.attempt_id });
    await new Promise((r) => setTimeout(r, 100));
    expect(log).toEqual(['start']); // nothing runs before start.ok
    log.push('start.ok');
    s.send({ type: 'start.ok', attempt_id: f.attempt_id, lease_expires_at: new Date(Date.now() + 30_000).toISOString() });
    const result = await s.next('result');
    log.push('result');
    expect(log).toEqual(['start', 'start.ok', 'handler', 'result']);
    expect(result).toEqual({ type: 'result', attempt_id: f.attempt_id, outcome: 'succeeded', output: { wrote: true } });
    expect(typeof ctx!.concurrencyToken).toBe('bigint');
    expect(ctx!.concurrencyToken).toBe(18446744073709551615n);
    expect(ctx!.task).toMatchObject({
      id: f.task.id,
      queueId: f.task.queue_id,
      handler: 'object.update',
      handlerVersion: 'v1',
      payloadVersion: 'v1',
      payload: { n: 1 },
      concurrencyKey: 'object/42',
      priority: 0,
      deadlineAt: f.task.deadline_at,
    });
    expect(ctx!.attemptId).toBe(f.attempt_id);
    expect(ctx!.attemptNo).toBe(1);
    s.send({ type: 'result.ok', attempt_id: f.attempt_id, deduplicated: false, task_state: 'SUCCEEDED' });
    await waitFor('no task in flight', () => w.inFlight === 0, FAST);
    expect(s.invalid).toEqual([]);
  });

  it('an unkeyed task has no token', async () => {
    gw.opts.autoStart = true;
    gw.opts.autoResult = true;
    let token: unknown = 'unset';
    const w = worker((e) => {
      token = e.concurrencyToken;
    });
    const s = await gw.nextSession();
    await w.ready;
    s.assign({});
    const r = await s.next('result');
    expect(r).toMatchObject({ outcome: 'succeeded' });
    expect(r).not.toHaveProperty('output');
    expect(token).toBeUndefined();
  });

  it('LEASE_LOST on start: the handler never runs and no result is sent', async () => {
    let calls = 0;
    const w = worker(() => {
      calls++;
    });
    const s = await gw.nextSession();
    await w.ready;
    const f = s.assign({ key: 'k', token: '3' });
    await s.next('start');
    s.send({ type: 'error', code: 'LEASE_LOST', message: 'expired', attempt_id: f.attempt_id, fatal: false });
    await waitFor('no task in flight', () => w.inFlight === 0, FAST);
    await new Promise((r) => setTimeout(r, 50));
    expect(calls).toBe(0);
    expect(s.received.map((x) => x.type)).toEqual(['start']);
  });
});

// A gateway never assigns beyond the capacity a session declared (a real one cannot be made to),
// so these feed the extra assign from the hostile fake gateway: the SDK's own refusal.
describe('task.assign beyond the declared capacity → close 1002, handler never runs', () => {
  const beyond = (held: number, capacity: number) => `task.assign beyond the declared capacity: ${held} attempts held, capacity ${capacity}`;

  /** A low-level session with capacity `capacity`, recording its assigns and violations in order. */
  async function session(capacity: number, resume?: string[]) {
    const conn = await connect({
      url: gw.url,
      token: 'secret-token',
      registration: { workerId: `w-cap-${hexId().slice(0, 8)}`, queues: [hexId()], capacity, concurrencyKeys: true, resume },
    });
    const s = await gw.nextSession();
    const seen: string[] = [];
    conn.on('assign', (f) => seen.push(`assign ${f.attempt_id}`));
    conn.on('protocolError', (v) => seen.push(`violation ${v.attemptId}: ${v.message}`));
    return { conn, s, seen };
  }

  it('refuses a new attempt once capacity are held; a repeated assign of a held one is accepted', async () => {
    const { s, seen } = await session(2);
    const a = s.assign({});
    const b = s.assign({});
    s.send(a); // the same attempt again: allowed by the protocol, not counted twice
    const c = s.assign({});
    const closed = await s.closed;
    expect(closed).toEqual({ code: 1002, reason: beyond(2, 2) });
    await vi.waitFor(() => expect(seen).toHaveLength(4), { timeout: 5000, interval: 10 });
    expect(seen).toEqual([`assign ${a.attempt_id}`, `assign ${b.attempt_id}`, `assign ${a.attempt_id}`, `violation ${c.attempt_id}: ${beyond(2, 2)}`]);
  });

  it('counts as the gateway does: cancel, renew.ok lost, LEASE_LOST/NOT_FOUND/STATE_CONFLICT and result.ok free a slot; resumed attempts hold one', async () => {
    const { conn, s, seen } = await session(1);
    const ids: string[] = [];
    const next = () => {
      const f = s.assign({});
      ids.push(f.attempt_id);
      return f.attempt_id;
    };
    const a = next();
    s.send({ type: 'task.cancel', attempt_id: a, reason: 'CANCELLED' });
    const b = next();
    s.send({ type: 'renew.ok', leases: [], lost: [b] });
    let prev = next();
    for (const code of ['LEASE_LOST', 'NOT_FOUND', 'STATE_CONFLICT']) {
      s.send({ type: 'error', code, message: 'no', attempt_id: prev, fatal: false });
      prev = next();
    }
    s.send({ type: 'result.ok', attempt_id: prev, deduplicated: false, task_state: 'SUCCEEDED' });
    const last = next();
    // Raised before the capacity frame is sent, not lowered by a lower capacity (granted assigns may follow).
    await vi.waitFor(() => expect(seen).toHaveLength(ids.length), { timeout: 5000, interval: 10 });
    conn.capacity(2);
    conn.capacity(1);
    expect(await s.next('capacity')).toEqual({ type: 'capacity', capacity: 2 });
    const second = next();
    const extra = s.assign({});
    expect(await s.closed).toEqual({ code: 1002, reason: beyond(2, 2) });
    await vi.waitFor(() => expect(seen).toHaveLength(ids.length + 1), { timeout: 5000, interval: 10 });
    expect(seen).toEqual([...ids.map((id) => `assign ${id}`), `violation ${extra.attempt_id}: ${beyond(2, 2)}`]);
    expect(ids.at(-2)).toBe(last);
    expect(ids.at(-1)).toBe(second);

    // A resumed attempt is held from hello.ok on.
    const resumed = hexId();
    gw.leases.set(resumed, { state: 'RUNNING' });
    const r = await session(1, [resumed]);
    const over = r.s.assign({});
    expect(await r.s.closed).toEqual({ code: 1002, reason: beyond(1, 1) });
    await vi.waitFor(() => expect(r.seen).toEqual([`violation ${over.attempt_id}: ${beyond(1, 1)}`]), { timeout: 5000, interval: 10 });
  });

  it('a worker never hands the extra attempt to a handler and does not resume it', async () => {
    let calls = 0;
    const w = createWorker({
      url: gw.url,
      token: 'secret-token',
      queues: [hexId()],
      capacity: 1,
      prefetch: 1,
      handlers: { 'object.update': { versions: ['v1'], fn: () => void calls++ } },
      logger: silent,
      reconnect: { initialDelayMs: 20, maxDelayMs: 100 },
    });
    workers.push(w);
    const violations: ProtocolViolation[] = [];
    w.on('protocolError', (v) => violations.push(v));
    const s = await gw.nextSession();
    await w.ready;
    expect(s.hello.capacity).toBe(2);
    const a = s.assign({});
    const b = s.assign({});
    const c = s.assign({});
    expect(await s.closed).toEqual({ code: 1002, reason: beyond(2, 2) });
    expect(violations.map((v) => [v.attemptId, v.message])).toEqual([[c.attempt_id, beyond(2, 2)]]);
    const s2 = await gw.nextSession();
    expect(s2.hello.resume).toEqual([a.attempt_id, b.attempt_id]);
    await new Promise((r) => setTimeout(r, 50)); // absence: the handler is not called (no start.ok was sent)
    expect(calls).toBe(0);
    expect(s.received.filter((x) => x.type === 'start').map((x) => (x as { attempt_id: string }).attempt_id)).toEqual([a.attempt_id]);
  });
});
