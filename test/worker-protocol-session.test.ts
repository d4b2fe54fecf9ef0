// Worker protocol contract (docs/worker-protocol.md) over a raw WebSocket, after hello: frame
// validation, per-attempt errors, intake control (capacity, drain, handler filter, capability flag).
// No SDK, no mocks: a real gateway process and its database. Handshake and hello rules:
// worker-protocol-handshake.test.ts; credential revocation and pings: worker-protocol-liveness.test.ts.
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { RowDataPacket } from 'mysql2/promise';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { hello, openRaw } from './support/raw-worker.js';
import { GW_ENV, MAX_FRAME, expectFatal, expectNothing, hex32, protocolHelpers, session } from './support/worker-protocol-fixture.js';
import { waitForValue } from './support/wait.js';
import { newId } from '../server/ids.js';
import { submitTask } from './support/submit.js';

const f = useGatewayFixture({ gatewayEnv: GW_ENV });

const { attemptRow, taskState, sessionRow } = protocolHelpers(() => f);

// ---- frames after hello -------------------------------------------------------------------------

describe('frame validation after hello', () => {
  const bad: [string, string][] = [
    ['unknown type', JSON.stringify({ type: 'nope' })],
    ['gateway frame type', JSON.stringify({ type: 'hello.ok' })],
    ['type not a string', JSON.stringify({ type: 1 })],
    ['no type', JSON.stringify({ attempt_id: 'x' })],
    ['invalid JSON', '{"type":"start",'],
    ['not JSON at all', 'hello'],
    ['empty frame', ''],
    ['JSON array', '[{"type":"drain"}]'],
    ['JSON string', '"drain"'],
    ['JSON null', 'null'],
    ['JSON number', '42'],
    ['two objects', '{"type":"drain"}{"type":"drain"}'],
    ['start with an unknown field', JSON.stringify({ type: 'start', attempt_id: 'x', extra: 1 })],
    ['start without attempt_id', JSON.stringify({ type: 'start' })],
    ['start attempt_id a number', JSON.stringify({ type: 'start', attempt_id: 5 })],
    ['start attempt_id empty', JSON.stringify({ type: 'start', attempt_id: '' })],
    ['start attempt_id 65 chars', JSON.stringify({ type: 'start', attempt_id: 'a'.repeat(65) })],
    ['renew attempt_ids empty', JSON.stringify({ type: 'renew', attempt_ids: [] })],
    ['renew 1025 attempt_ids', JSON.stringify({ type: 'renew', attempt_ids: Array.from({ length: 1025 }, () => newId()) })],
    ['renew attempt_ids a string', JSON.stringify({ type: 'renew', attempt_ids: 'x' })],
    ['renew attempt_ids of numbers', JSON.stringify({ type: 'renew', attempt_ids: [1] })],
    ['result unknown outcome', JSON.stringify({ type: 'result', attempt_id: 'x', outcome: 'done' })],
    ['result without outcome', JSON.stringify({ type: 'result', attempt_id: 'x' })],
    ['result error without message', JSON.stringify({ type: 'result', attempt_id: 'x', outcome: 'failed', error: { code: 'X' } })],
    [
      'result error with an unknown field',
      JSON.stringify({ type: 'result', attempt_id: 'x', outcome: 'failed', error: { code: 'X', message: 'm', stack: 's' } }),
    ],
    ['result retry_after_ms -1', JSON.stringify({ type: 'result', attempt_id: 'x', outcome: 'retry', retry_after_ms: -1 })],
    ['result retry_after_ms 1.5', JSON.stringify({ type: 'result', attempt_id: 'x', outcome: 'retry', retry_after_ms: 1.5 })],
    ['result with an unknown field', JSON.stringify({ type: 'result', attempt_id: 'x', outcome: 'succeeded', task_state: 'SUCCEEDED' })],
    ['capacity 1025', JSON.stringify({ type: 'capacity', capacity: 1025 })],
    ['capacity -1', JSON.stringify({ type: 'capacity', capacity: -1 })],
    ['capacity "1"', JSON.stringify({ type: 'capacity', capacity: '1' })],
    ['capacity missing', JSON.stringify({ type: 'capacity' })],
    ['drain with a field', JSON.stringify({ type: 'drain', now: true })],
  ];

  it.each(bad)('%s → PROTOCOL_ERROR fatal, 1002', async (_name, text) => {
    const { w } = await session(f.gw.url, f.t, { capacity: 0 });
    w.sendRaw(text);
    await expectFatal(w, 'PROTOCOL_ERROR', 1002);
  });

  it('a binary frame → PROTOCOL_ERROR, 1003 (before and after hello)', async () => {
    const { w } = await session(f.gw.url, f.t, { capacity: 0 });
    w.sendRaw(Buffer.from(JSON.stringify({ type: 'drain' })), true);
    await expectFatal(w, 'PROTOCOL_ERROR', 1003);
    const w2 = await openRaw(f.gw.url, f.t.token);
    w2.sendRaw(Buffer.from(JSON.stringify(hello([f.t.queue_id]))), true);
    await expectFatal(w2, 'PROTOCOL_ERROR', 1003);
  });

  it('a frame over max_frame_bytes → 1009; one just under is handled', async () => {
    const { w } = await session(f.gw.url, f.t, { capacity: 0 });
    // Under the limit: a well-formed result for an unknown attempt is answered, not cut.
    const id = hex32();
    const under = JSON.stringify({ type: 'result', attempt_id: id, outcome: 'succeeded', output: { pad: 'x'.repeat(200_000) } });
    expect(Buffer.byteLength(under)).toBeLessThan(MAX_FRAME);
    w.sendRaw(under);
    expect(await w.next('error')).toEqual({ type: 'error', code: 'NOT_FOUND', message: expect.any(String), attempt_id: id, fatal: false });
    w.sendRaw(JSON.stringify({ type: 'result', attempt_id: hex32(), outcome: 'succeeded', output: { pad: 'x'.repeat(400_000) } }));
    expect((await w.closed).code).toBe(1009);

    const w2 = await openRaw(f.gw.url, f.t.token);
    w2.sendRaw('x'.repeat(400_000));
    expect((await w2.closed).code).toBe(1009);
  });
});

// ---- per-attempt errors -------------------------------------------------------------------------

describe('per-attempt errors are not fatal', () => {
  it('start / result for an unknown attempt → NOT_FOUND with attempt_id; the session keeps working', async () => {
    const tn = await newTenant(f.db);
    const { w } = await session(f.gw.url, tn, { capacity: 2 });
    const ids = [hex32(), 'not-hex'];
    for (const id of ids) {
      w.send({ type: 'start', attempt_id: id });
      expect(await w.next('error')).toEqual({ type: 'error', code: 'NOT_FOUND', message: expect.any(String), attempt_id: id, fatal: false });
      w.send({ type: 'result', attempt_id: id, outcome: 'succeeded', output: 1 });
      expect(await w.next('error')).toEqual({ type: 'error', code: 'NOT_FOUND', message: expect.any(String), attempt_id: id, fatal: false });
    }
    w.send({ type: 'renew', attempt_ids: ids });
    expect(await w.next('renew.ok')).toEqual({ type: 'renew.ok', leases: [], lost: ids });
    const task = await submitTask(f.gw.url, tn);
    const a = await w.next('task.assign');
    expect(a.task.id).toBe(task.id);
    w.send({ type: 'start', attempt_id: a.attempt_id });
    expect(await w.next('start.ok')).toMatchObject({ type: 'start.ok', attempt_id: a.attempt_id });
    w.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded' });
    expect(await w.next('result.ok')).toEqual({ type: 'result.ok', attempt_id: a.attempt_id, deduplicated: false, task_state: 'SUCCEEDED' });
    expect(w.ws.readyState).toBe(WebSocket.OPEN);
    w.close();
  });

  it('start / result / renew for an attempt of another worker_id → LEASE_LOST; nothing changes', async () => {
    const tn = await newTenant(f.db);
    const { w: owner } = await session(f.gw.url, tn, { capacity: 1 });
    const task = await submitTask(f.gw.url, tn);
    const a = await owner.next('task.assign');
    expect(a.task.id).toBe(task.id);
    const before = await attemptRow(a.attempt_id);
    expect(before.state).toBe('LEASED');

    const { w: thief } = await session(f.gw.url, tn, { capacity: 0 });
    thief.send({ type: 'start', attempt_id: a.attempt_id });
    expect(await thief.next('error')).toEqual({ type: 'error', code: 'LEASE_LOST', message: expect.any(String), attempt_id: a.attempt_id, fatal: false });
    thief.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'failed', error: { code: 'X', message: 'no' } });
    expect(await thief.next('error')).toEqual({ type: 'error', code: 'LEASE_LOST', message: expect.any(String), attempt_id: a.attempt_id, fatal: false });
    thief.send({ type: 'renew', attempt_ids: [a.attempt_id] });
    expect(await thief.next('renew.ok')).toEqual({ type: 'renew.ok', leases: [], lost: [a.attempt_id] });
    expect(thief.ws.readyState).toBe(WebSocket.OPEN);
    expect(await attemptRow(a.attempt_id)).toEqual(before);
    expect(await taskState(task.id)).toBe('LEASED');

    owner.send({ type: 'start', attempt_id: a.attempt_id });
    await owner.next('start.ok');
    owner.send({ type: 'start', attempt_id: a.attempt_id });
    await owner.next('start.ok');
    owner.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded' });
    expect((await owner.next('result.ok')).task_state).toBe('SUCCEEDED');
    owner.close();
    thief.close();
  });

  it('a protocol error changes nothing about the worker attempts', async () => {
    const tn = await newTenant(f.db);
    const { w, ok } = await session(f.gw.url, tn, { capacity: 2 });
    const t1 = await submitTask(f.gw.url, tn);
    const t2 = await submitTask(f.gw.url, tn);
    const a1 = await w.next('task.assign');
    const a2 = await w.next('task.assign');
    const running = [a1, a2].find((a) => a.task.id === t1.id)!;
    const leased = [a1, a2].find((a) => a.task.id === t2.id)!;
    w.send({ type: 'start', attempt_id: running.attempt_id });
    await w.next('start.ok');
    const before = [await attemptRow(running.attempt_id), await attemptRow(leased.attempt_id)];
    expect(before.map((r) => r.state)).toEqual(['RUNNING', 'LEASED']);

    w.send({ type: 'result', attempt_id: running.attempt_id, outcome: 'succeeded', surprise: 1 });
    await expectFatal(w, 'PROTOCOL_ERROR', 1002);
    const row = await waitForValue(
      () => sessionRow(ok.session_id),
      (r) => r?.state === 'CLOSED',
    );
    expect(row).toMatchObject({ state: 'CLOSED', close_code: 1002 });
    expect([await attemptRow(running.attempt_id), await attemptRow(leased.attempt_id)]).toEqual(before);
    expect(await taskState(t1.id)).toBe('RUNNING');
    expect(await taskState(t2.id)).toBe('LEASED');
    const [q] = await f.db.pool.query<RowDataPacket[]>('SELECT active_attempts FROM queues WHERE id = ?', [tn.queue_id]);
    expect(Number(q[0]!.active_attempts)).toBe(2);
  });
});

// ---- intake control -----------------------------------------------------------------------------

describe('intake', () => {
  it('capacity 0 pauses intake; capacity 1 resumes it; capacity bounds LEASED+RUNNING', async () => {
    const tn = await newTenant(f.db);
    const { w } = await session(f.gw.url, tn, { capacity: 0 });
    const t1 = await submitTask(f.gw.url, tn);
    await expectNothing(w, 'task.assign');
    expect(await taskState(t1.id)).toBe('WAITING');
    w.send({ type: 'capacity', capacity: 1 });
    const a1 = await w.next('task.assign');
    expect(a1.task.id).toBe(t1.id);
    const t2 = await submitTask(f.gw.url, tn);
    await expectNothing(w, 'task.assign');
    w.send({ type: 'start', attempt_id: a1.attempt_id });
    await w.next('start.ok');
    await expectNothing(w, 'task.assign', 300);
    w.send({ type: 'result', attempt_id: a1.attempt_id, outcome: 'succeeded' });
    await w.next('result.ok');
    const a2 = await w.next('task.assign');
    expect(a2.task.id).toBe(t2.id);
    // Pausing again: a held attempt stays, nothing new comes.
    w.send({ type: 'capacity', capacity: 0 });
    const t3 = await submitTask(f.gw.url, tn);
    await expectNothing(w, 'task.assign');
    w.send({ type: 'result', attempt_id: a2.attempt_id, outcome: 'succeeded' });
    await w.next('result.ok');
    await expectNothing(w, 'task.assign', 300);
    expect(await taskState(t3.id)).toBe('WAITING');
    w.send({ type: 'capacity', capacity: 1024 });
    expect((await w.next('task.assign')).task.id).toBe(t3.id);
    w.close();
  });

  it('drain → drain.ok and no further task.assign; held attempts still finish', async () => {
    const tn = await newTenant(f.db);
    const { w, ok } = await session(f.gw.url, tn, { capacity: 4 });
    await submitTask(f.gw.url, tn);
    const a = await w.next('task.assign');
    w.send({ type: 'drain' });
    expect(await w.next('drain.ok')).toEqual({ type: 'drain.ok' });
    const t2 = await submitTask(f.gw.url, tn);
    await expectNothing(w, 'task.assign');
    w.send({ type: 'capacity', capacity: 8 });
    await expectNothing(w, 'task.assign');
    w.send({ type: 'start', attempt_id: a.attempt_id });
    await w.next('start.ok');
    w.send({ type: 'renew', attempt_ids: [a.attempt_id] });
    expect((await w.next('renew.ok')).leases.map((l: any) => l.attempt_id)).toEqual([a.attempt_id]);
    w.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded' });
    expect((await w.next('result.ok')).task_state).toBe('SUCCEEDED');
    await expectNothing(w, 'task.assign', 300);
    expect(await taskState(t2.id)).toBe('WAITING');
    w.close();
    expect((await w.closed).code).toBe(1000);
    expect(
      await waitForValue(
        () => sessionRow(ok.session_id),
        (r) => r?.state === 'CLOSED',
      ),
    ).toMatchObject({ close_code: 1000 });
    // Another worker takes the waiting task.
    const { w: w2 } = await session(f.gw.url, tn);
    expect((await w2.next('task.assign')).task.id).toBe(t2.id);
    w2.close();
  });

  it('hello.handlers assigns only matching handler@version', async () => {
    const tn = await newTenant(f.db);
    const a1 = await submitTask(f.gw.url, tn, { handler: 'a', handler_version: 'v1' });
    const b2 = await submitTask(f.gw.url, tn, { handler: 'b', handler_version: 'v2' });
    const a2 = await submitTask(f.gw.url, tn, { handler: 'a', handler_version: 'v2' });
    const c3 = await submitTask(f.gw.url, tn, { handler: 'c', handler_version: 'v3' });
    const { w } = await session(f.gw.url, tn, {
      capacity: 10,
      handlers: [
        { handler: 'a', versions: ['v2'] },
        { handler: 'c', versions: ['v1', 'v3'] },
      ],
    });
    const got = [await w.next('task.assign'), await w.next('task.assign')].map((f) => f.task);
    expect(got.map((x) => x.id).sort()).toEqual([a2.id, c3.id].sort());
    for (const x of got) expect(`${x.handler}@${x.handler_version}`).toMatch(/^(a@v2|c@v3)$/);
    await expectNothing(w, 'task.assign');
    expect(await taskState(a1.id)).toBe('WAITING');
    expect(await taskState(b2.id)).toBe('WAITING');
    w.close();
    // Without a filter, everything is eligible.
    const { w: all } = await session(f.gw.url, tn, { capacity: 10 });
    const rest = [await all.next('task.assign'), await all.next('task.assign')].map((f) => f.task.id);
    expect(rest.sort()).toEqual([a1.id, b2.id].sort());
    all.close();
  });

  it('keyed tasks never go to a session without concurrency_keys; unkeyed ones do', async () => {
    const tn = await newTenant(f.db);
    const keyed = await submitTask(f.gw.url, tn, { concurrency_key: 'object/7' });
    const plain = await submitTask(f.gw.url, tn);
    for (const flag of [false, undefined]) {
      const { w } = await session(f.gw.url, tn, { capacity: 4, ...(flag === undefined ? {} : { concurrency_keys: flag }) });
      if (flag === false) {
        const a = await w.next('task.assign');
        expect(a.task.id).toBe(plain.id);
        expect(a.task.concurrency_key).toBeUndefined();
        expect(a.concurrency_token).toBeUndefined();
        w.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded' });
        await w.next('result.ok');
      }
      await expectNothing(w, 'task.assign');
      expect(await taskState(keyed.id)).toBe('WAITING');
      w.close();
      await w.closed;
    }
    const { w: capable } = await session(f.gw.url, tn, { capacity: 4, concurrency_keys: true });
    const a = await capable.next('task.assign');
    expect(a.task.id).toBe(keyed.id);
    expect(a.task.concurrency_key).toBe('object/7');
    expect(a.concurrency_token).toMatch(/^[1-9][0-9]*$/);
    capable.close();
  });
});
