// Regressions of the fault and hostile-input probe (issue: one frame killed a gateway node). Each
// case sends exactly the probe's input over a raw socket or raw HTTP, asserts the documented
// outcome, and then that the node is still serving: process alive, /healthz 200, and a normal
// worker gets a task assigned and finishes it.
import crypto from 'node:crypto';
import net from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { hello, openRaw, type RawWorker } from './support/raw-worker.js';
import { expectServing as expectNodeServing } from './support/serving.js';
import { submitTask } from './support/submit.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';

const MAX_FRAME = 300 * 1024;
const f = useGatewayFixture({ gatewayEnv: { ORBIT_MAX_FRAME_BYTES: String(MAX_FRAME), ORBIT_PING_INTERVAL_MS: '3000' } });
let probe: CredentialsFile;
beforeAll(async () => {
  probe = await newTenant(f.db);
});

const submit = async (t: CredentialsFile) => (await submitTask(f.gw.url, t, { payload: {} })).id;
const expectServing = () => expectNodeServing(f.gw, probe);

async function expectProtocolClose(w: RawWorker, close: number) {
  const e = await w.next('error');
  expect(e).toMatchObject({ type: 'error', code: 'PROTOCOL_ERROR', fatal: true });
  const c = await w.closed;
  expect(c.code).toBe(close);
  expect(Buffer.byteLength(c.reason)).toBeLessThanOrEqual(123);
  return c;
}

describe('close reasons are cut by UTF-8 bytes', () => {
  it('{"type":"😀"×40} before hello → PROTOCOL_ERROR, 1002, node serving', async () => {
    const w = await openRaw(f.gw.url, f.t.token);
    w.sendRaw(JSON.stringify({ type: '😀'.repeat(40) }));
    const c = await expectProtocolClose(w, 1002);
    expect(c.reason.isWellFormed()).toBe(true);
    await expectServing();
  });

  it('after hello, an unknown field named 60×é → PROTOCOL_ERROR, 1002, node serving', async () => {
    const w = await openRaw(f.gw.url, f.t.token);
    w.send(hello([f.t.queue_id], { capacity: 0 }));
    await w.next('hello.ok');
    w.sendRaw(JSON.stringify({ type: 'drain', ['é'.repeat(60)]: 1 }));
    await expectProtocolClose(w, 1002);
    await expectServing();
  });
});

describe('ids that can never exist are NOT_FOUND before any SQL', () => {
  it.each(['é', '😀', '\ud800', '\u00a0nbsp', 'A'.repeat(32), 'a'.repeat(33)])('POST /v1/tasks queue_id %j → 404, nothing stored', async (qid) => {
    const body = { queue_id: qid, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: {} };
    const r = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), body });
    expect(r.status, r.text).toBe(404);
    expect(r.body.error.code).toBe('NOT_FOUND');
    const [rows] = await f.db.pool.query('SELECT COUNT(*) AS n FROM receipts WHERE namespace_id = ? AND operation = ?', [f.t.namespace_id, 'POST /v1/tasks']);
    expect(Number((rows as { n: number }[])[0]!.n)).toBe(0);
  });

  it.each([
    ['GET', '/v1/tasks?queue_id=%C3%A9'],
    ['GET', '/v1/tasks/%C3%A9'],
    ['GET', '/v1/tasks/%F0%9F%98%80/attempts'],
    ['GET', '/v1/attempts/%C3%A9'],
    ['GET', '/v1/queues/%C3%A9'],
    ['POST', '/v1/queues/%C3%A9:pause'],
    ['GET', '/v1/subscriptions/%C2%A0nbsp'],
    ['POST', '/v1/tasks/%C3%A9:cancel'],
  ])('%s %s → 404', async (method, path) => {
    const r = await call(f.gw.url, method, path, {
      token: f.t.token,
      ...(method === 'POST' ? { key: ikey(), body: path.endsWith(':pause') ? { expected_revision: '1' } : {} } : {}),
    });
    expect(r.status, r.text).toBe(404);
    expect(r.body.error.code).toBe('NOT_FOUND');
  });

  it('subscription create with queue_id é → 404', async () => {
    const r = await call(f.gw.url, 'POST', '/v1/subscriptions', {
      token: f.t.token,
      key: ikey(),
      body: { name: 'fuzz', queue_id: 'é', event_types: ['task.succeeded'] },
    });
    expect(r.status, r.text).toBe(404);
    await expectServing();
  });
});

describe('frames the WebSocket layer refuses get the PROTOCOL_ERROR frame first', () => {
  it.each([
    ['4 MiB', 4 * 1024 * 1024],
    ['just over twice the limit', 2 * MAX_FRAME + 1],
  ])('a frame of %s → PROTOCOL_ERROR, 1009', async (_n, size) => {
    const w = await openRaw(f.gw.url, f.t.token);
    w.send(hello([f.t.queue_id], { capacity: 0 }));
    await w.next('hello.ok');
    w.sendRaw(JSON.stringify({ type: 'renew', attempt_ids: ['x'], pad: 'p'.repeat(size) }));
    await expectProtocolClose(w, 1009);
    await expectServing();
  });

  it('a text frame that is not valid UTF-8 → PROTOCOL_ERROR, 1002 (not 1007)', async () => {
    const w = await openRaw(f.gw.url, f.t.token);
    w.sendRaw(Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d]), false);
    await expectProtocolClose(w, 1002);
    await expectServing();
  });
});

async function revoke(t: CredentialsFile) {
  const hash = crypto.createHash('sha256').update(t.token).digest();
  await f.db.pool.query('UPDATE credentials SET revoked_at = UTC_TIMESTAMP(3) WHERE token_hash = ?', [hash]);
}

describe('revocation takes effect inside the transactions', () => {
  it('a session whose credential was just revoked is never assigned a new task', async () => {
    const t = await newTenant(f.db);
    const w = await openRaw(f.gw.url, t.token);
    w.send(hello([t.queue_id], { capacity: 0 }));
    await w.next('hello.ok');
    await submit(t);
    await revoke(t);
    // Capacity now: the claim this triggers runs at once, well before the periodic check (500 ms);
    // its transaction sees the revocation and closes the session instead of assigning.
    w.send({ type: 'capacity', capacity: 4 });
    const e = await w.next('error', 5_000);
    expect(e).toMatchObject({ code: 'UNAUTHENTICATED', fatal: true });
    expect((await w.closed).code).toBe(1008);
    expect(w.frames.filter((x) => x.type === 'task.assign')).toEqual([]);
    const [rows] = await f.db.pool.query('SELECT COUNT(*) AS n FROM attempts WHERE namespace_id = ?', [t.namespace_id]);
    expect(Number((rows as { n: number }[])[0]!.n)).toBe(0);
  });

  it('a result from a session whose credential was revoked is refused and changes nothing', async () => {
    const t = await newTenant(f.db);
    const w = await openRaw(f.gw.url, t.token);
    w.send(hello([t.queue_id], { capacity: 1 }));
    await w.next('hello.ok');
    const id = await submit(t);
    const a = await w.next('task.assign');
    w.send({ type: 'start', attempt_id: a.attempt_id });
    await w.next('start.ok');
    await revoke(t);
    w.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded' });
    const e = await w.next('error', 5_000);
    expect(e).toMatchObject({ code: 'UNAUTHENTICATED', fatal: true });
    expect((await w.closed).code).toBe(1008);
    const [rows] = await f.db.pool.query('SELECT state FROM tasks WHERE id = ?', [id]);
    expect((rows as { state: string }[])[0]!.state).toBe('RUNNING');
  });
});

describe('slow senders and stopped workers', () => {
  it('a request whose headers never finish is answered 408 REQUEST_TIMEOUT within ~11 s', async () => {
    const sock = net.connect(Number(new URL(f.gw.url).port), '127.0.0.1');
    sock.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const started = Date.now();
    const text = await new Promise<string>((resolve) => {
      let buf = '';
      sock.on('data', (d) => (buf += d.toString()));
      sock.on('close', () => resolve(buf));
      sock.on('error', () => resolve(buf));
    });
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).error.code).toBe('REQUEST_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 20_000);

  it('a session that does not answer its ping gets no new assignment (while still open)', async () => {
    const t = await newTenant(f.db);
    const ws = await import('ws');
    // autoPong off: this client behaves like a stopped process (the socket is open, nothing answers).
    const silent = new ws.default(f.gw.url.replace(/^http/, 'ws') + '/v1/workers/connect', ['orbit.worker.v1'], {
      headers: { authorization: `Bearer ${t.token}` },
      autoPong: false,
    });
    const got: any[] = [];
    silent.on('message', (d) => got.push(JSON.parse(d.toString())));
    await new Promise((r) => silent.once('open', r));
    silent.send(JSON.stringify(hello([t.queue_id], { capacity: 4 })));
    await new Promise((r) => silent.once('message', r)); // hello.ok
    // Pings every 3 s: the first goes unanswered at ~3 s, and from ~5 s the session takes no new
    // work, while it is still open (two missed pongs close it only at ~9 s).
    await new Promise((r) => setTimeout(r, 5_500));
    expect(silent.readyState).toBe(ws.default.OPEN);
    await submit(t);
    const w = await openRaw(f.gw.url, t.token);
    w.send(hello([t.queue_id], { capacity: 1 }));
    await w.next('hello.ok');
    await w.next('task.assign');
    expect(got.filter((x) => x.type === 'task.assign')).toEqual([]);
    expect(silent.readyState).toBe(ws.default.OPEN);
    w.close();
    await w.closed;
    silent.terminate();
  });
});
