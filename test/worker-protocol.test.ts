// Worker protocol contract (shared/spec/worker-protocol.md) over a raw WebSocket: handshake, hello
// rules, frame validation, per-attempt errors, intake control (capacity, drain, handler filter,
// capability flag) and heartbeats. No SDK, no mocks: a real gateway process and its database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { RowDataPacket } from 'mysql2/promise';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { startGateway, stopAllGateways, type GatewayProcess } from './support/gateway.js';
import { call, ikey } from './support/http.js';
import { hello, openRaw, type RawWorker } from './support/raw-worker.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { insertCredential, revokeCredential } from '../server/db/credentials.js';
import { hashToken, newToken, type Scope } from '../server/http/auth.js';
import { newId } from '../server/ids.js';

const MAX_FRAME = 310_000;
const HELLO_TIMEOUT_MS = 300;
const PING_MS = 200;

let db: TestDb;
/** Default timings, small frame limit. */
let gw: GatewayProcess;
/** Short hello timeout and ping interval. */
let fast: GatewayProcess;
let t: CredentialsFile;

beforeAll(async () => {
  db = await createTestDb();
  [gw, fast] = await Promise.all([
    startGateway(db.dsn, { ORBIT_MAX_FRAME_BYTES: String(MAX_FRAME) }),
    startGateway(db.dsn, { ORBIT_HELLO_TIMEOUT_MS: String(HELLO_TIMEOUT_MS), ORBIT_PING_INTERVAL_MS: String(PING_MS) }),
  ]);
  t = await newTenant(db);
});
afterAll(async () => {
  await stopAllGateways();
  await db.drop();
});

// ---- helpers ------------------------------------------------------------------------------------

async function submit(tenant: CredentialsFile, over: Record<string, unknown> = {}) {
  const r = await call(gw.url, 'POST', '/v1/tasks', {
    token: tenant.token,
    key: ikey(),
    body: { queue_id: tenant.queue_id, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: { n: 1 }, ...over },
  });
  expect(r.status, r.text).toBe(201);
  return r.body.data.task as { id: string };
}

async function credential(tenant: CredentialsFile, scopes: Scope[], queueIds: '*' | string[] = '*') {
  const token = newToken();
  const id = newId();
  await insertCredential(db.pool, { id, namespaceId: tenant.namespace_id, name: `test ${id.slice(0, 6)}`, tokenHash: hashToken(token), scopes, queueIds });
  return { id, token };
}

/** A raw handshake that reports the HTTP refusal (status and JSON body) instead of throwing. */
function handshake(
  url: string,
  opts: { path?: string; token?: string | null; protocols?: string[]; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    const ws = new WebSocket(url.replace(/^http/, 'ws') + (opts.path ?? '/v1/workers/connect'), opts.protocols ?? ['orbit.worker.v1'], { headers });
    ws.once('unexpected-response', (req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => {
        req.destroy();
        let body: any = null;
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    ws.once('open', () => {
      ws.close(1000);
      resolve({ status: 101, body: null });
    });
    ws.once('error', reject);
  });
}

/** Opens a session and waits for hello.ok. */
async function session(url: string, tenant: CredentialsFile, over: Record<string, unknown> = {}): Promise<{ w: RawWorker; ok: any }> {
  const w = await openRaw(url, tenant.token);
  w.send(hello([tenant.queue_id], over));
  const ok = await w.next('hello.ok');
  return { w, ok };
}

/** The fatal error frame, then the close with `closeCode`. */
async function expectFatal(w: RawWorker, code: string, closeCode: number) {
  const err = await w.next('error', 5000);
  expect(err).toMatchObject({ type: 'error', code, fatal: true });
  expect(typeof err.message).toBe('string');
  expect(err.attempt_id).toBeUndefined();
  const closed = await w.closed;
  expect(closed.code).toBe(closeCode);
  return err;
}

async function expectNothing(w: RawWorker, type: string, ms = 500) {
  await expect(w.next(type, ms)).rejects.toThrow(/no .* within/);
}

async function attemptRow(id: string) {
  const [rows] = await db.pool.query<RowDataPacket[]>(
    `SELECT state, worker_id, session_id, DATE_FORMAT(lease_expires_at, '%Y-%m-%d %H:%i:%s.%f') AS lease FROM attempts WHERE id = ?`,
    [id],
  );
  return rows[0]!;
}

async function taskState(id: string): Promise<string> {
  const [rows] = await db.pool.query<RowDataPacket[]>('SELECT state FROM tasks WHERE id = ?', [id]);
  return rows[0]!.state as string;
}

async function sessionRow(id: string) {
  const [rows] = await db.pool.query<RowDataPacket[]>('SELECT state, close_code, worker_id, capacity, concurrency_keys FROM worker_sessions WHERE id = ?', [id]);
  return rows[0];
}

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
}

const hex32 = () => newId();

// ---- handshake ----------------------------------------------------------------------------------

describe('handshake', () => {
  it('accepts the subprotocol with a worker credential', async () => {
    expect((await handshake(gw.url, { token: t.token })).status).toBe(101);
    // Offered among others, the right one is selected.
    const ws = new WebSocket(gw.url.replace(/^http/, 'ws') + '/v1/workers/connect', ['x.other', 'orbit.worker.v1'], { headers: { authorization: `Bearer ${t.token}` } });
    await new Promise((r) => ws.once('open', r));
    expect(ws.protocol).toBe('orbit.worker.v1');
    ws.close();
  });

  it('missing subprotocol → 400', async () => {
    const r = await handshake(gw.url, { token: t.token, protocols: [] });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('INVALID_ARGUMENT');
  });

  it('wrong subprotocol → 400', async () => {
    for (const p of [['orbit.worker.v2'], ['orbit.worker'], ['ORBIT.WORKER.V1']]) {
      const r = await handshake(gw.url, { token: t.token, protocols: p });
      expect(r.status, p[0]).toBe(400);
      expect(r.body.error.code).toBe('INVALID_ARGUMENT');
    }
  });

  it('no token, malformed header, unknown token → 401', async () => {
    const cases: { token?: string | null; headers?: Record<string, string> }[] = [
      { token: null },
      { headers: { authorization: 'Basic dXNlcjpwYXNz' } },
      { headers: { authorization: 'Bearer short' } },
      { headers: { authorization: `Bearer ${t.token} extra` } },
      { token: newToken() },
    ];
    for (const c of cases) {
      const r = await handshake(gw.url, c);
      expect(r.status, JSON.stringify(c)).toBe(401);
      expect(r.body.error.code).toBe('UNAUTHENTICATED');
    }
  });

  it('revoked token → 401', async () => {
    const c = await credential(t, ['workers:connect', 'workers:consume']);
    expect((await handshake(gw.url, { token: c.token })).status).toBe(101);
    expect(await revokeCredential(db.pool, c.id)).toBe(true);
    const r = await handshake(gw.url, { token: c.token });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('UNAUTHENTICATED');
  });

  it('a credential without workers:connect or workers:consume → 403', async () => {
    for (const scopes of [['workers:connect'], ['workers:consume'], ['tasks:submit', 'tasks:read'], []] as Scope[][]) {
      const c = await credential(t, scopes);
      const r = await handshake(gw.url, { token: c.token });
      expect(r.status, scopes.join(' ')).toBe(403);
      expect(r.body.error.code).toBe('PERMISSION_DENIED');
    }
  });

  it('wrong path → 404', async () => {
    for (const path of ['/v1/workers/connect/', '/v1/workers', '/v1/tasks', '/', '/v2/workers/connect']) {
      const r = await handshake(gw.url, { token: t.token, path });
      expect(r.status, path).toBe(404);
      expect(r.body.error.code).toBe('NOT_FOUND');
    }
    // A query string does not change the path.
    expect((await handshake(gw.url, { token: t.token, path: '/v1/workers/connect?x=1' })).status).toBe(101);
  });
});

// ---- hello --------------------------------------------------------------------------------------

describe('hello', () => {
  it('hello.ok has exactly the documented fields', async () => {
    const tn = await newTenant(db);
    await db.pool.query('UPDATE queues SET lease_seconds = 45 WHERE id = ?', [tn.queue_id]);
    const { w, ok } = await session(gw.url, tn, { worker_id: 'billing-7f3a-18233-Xk2p', agent: 'raw-test/1' });
    expect(Object.keys(ok).sort()).toEqual(['lease_ms', 'lost', 'max_frame_bytes', 'renew_ms', 'resumed', 'session_id', 'type', 'worker_id']);
    expect(ok.session_id).toMatch(/^[0-9a-f]{32}$/);
    expect(ok.worker_id).toBe('billing-7f3a-18233-Xk2p');
    expect(ok.lease_ms).toBe(45_000);
    expect(Number.isInteger(ok.renew_ms)).toBe(true);
    expect(ok.renew_ms).toBeGreaterThan(0);
    expect(ok.renew_ms).toBeLessThan(ok.lease_ms);
    expect(ok.max_frame_bytes).toBe(MAX_FRAME);
    expect(ok.resumed).toEqual([]);
    expect(ok.lost).toEqual([]);
    const row = await sessionRow(ok.session_id);
    expect(row).toMatchObject({ state: 'OPEN', worker_id: 'billing-7f3a-18233-Xk2p', capacity: 4 });
    w.close();
    await w.closed;
    const closed = await until(() => sessionRow(ok.session_id), (r) => r?.state === 'CLOSED');
    expect(closed).toMatchObject({ state: 'CLOSED', close_code: 1000 });
  });

  it('the default max_frame_bytes is 1 MiB', async () => {
    const { w, ok } = await session(fast.url, t, { capacity: 0 });
    expect(ok.max_frame_bytes).toBe(1024 * 1024);
    expect(ok.lease_ms).toBe(30_000);
    w.close();
  });

  it('resume of unknown ids on a fresh identity → all lost', async () => {
    const ids = [hex32(), 'not-an-id'];
    const { w, ok } = await session(gw.url, t, { capacity: 0, resume: ids });
    expect(ok.resumed).toEqual([]);
    expect(ok.lost).toEqual(ids);
    w.close();
  });

  it('a first frame other than hello → PROTOCOL_ERROR, 1002', async () => {
    for (const f of [{ type: 'start', attempt_id: hex32() }, { type: 'drain' }, { type: 'capacity', capacity: 1 }, { type: 'renew', attempt_ids: [hex32()] }]) {
      const w = await openRaw(gw.url, t.token);
      w.send(f);
      await expectFatal(w, 'PROTOCOL_ERROR', 1002);
    }
  });

  it('hello twice → PROTOCOL_ERROR, 1002 (after hello.ok and back to back)', async () => {
    const { w } = await session(gw.url, t, { capacity: 0 });
    w.send(hello([t.queue_id], { capacity: 0 }));
    await expectFatal(w, 'PROTOCOL_ERROR', 1002);

    const w2 = await openRaw(gw.url, t.token);
    const h = hello([t.queue_id], { capacity: 0 });
    w2.send(h);
    w2.send(h);
    await expectFatal(w2, 'PROTOCOL_ERROR', 1002);
    // No session of that identity is left OPEN in the database.
    const [rows] = await until(
      () => db.pool.query<RowDataPacket[]>(`SELECT state FROM worker_sessions WHERE worker_id = ? AND state <> 'CLOSED'`, [h.worker_id]),
      ([r]) => r.length === 0,
    );
    expect(rows).toEqual([]);
  });

  it('no hello within the time limit → PROTOCOL_ERROR, 1002', async () => {
    const opened = Date.now();
    const w = await openRaw(fast.url, t.token);
    const err = await expectFatal(w, 'PROTOCOL_ERROR', 1002);
    const took = Date.now() - opened;
    expect(err.message).toMatch(/hello/);
    expect(took).toBeGreaterThanOrEqual(HELLO_TIMEOUT_MS - 50);
    expect(took).toBeLessThan(HELLO_TIMEOUT_MS + 3000);
  });

  it('a hello in time is not cut by the hello timer', async () => {
    const { w } = await session(fast.url, t, { capacity: 0 });
    await expectNothing(w, 'error', HELLO_TIMEOUT_MS * 3);
    expect(w.ws.readyState).toBe(WebSocket.OPEN);
    w.close();
  });

  const badHellos: [string, (q: string) => Record<string, unknown>][] = [
    ['protocol 2', (q) => hello([q], { protocol: 2 })],
    ['protocol "1"', (q) => hello([q], { protocol: '1' })],
    ['protocol missing', (q) => { const h: Record<string, unknown> = hello([q]); delete h.protocol; return h; }],
    ['worker_id empty', (q) => hello([q], { worker_id: '' })],
    ['worker_id 65 chars', (q) => hello([q], { worker_id: 'w'.repeat(65) })],
    ['worker_id with a space', (q) => hello([q], { worker_id: 'bad id' })],
    ['worker_id with a slash', (q) => hello([q], { worker_id: 'a/b' })],
    ['worker_id non-ASCII', (q) => hello([q], { worker_id: 'wörker' })],
    ['worker_id a number', (q) => hello([q], { worker_id: 7 })],
    ['worker_id missing', (q) => { const h: Record<string, unknown> = hello([q]); delete h.worker_id; return h; }],
    ['0 queues', () => hello([])],
    ['65 queues', (q) => hello(Array.from({ length: 65 }, (_, i) => (i === 0 ? q : hex32())))],
    ['queues not an array', (q) => hello([q], { queues: q })],
    ['queue id empty string', () => hello([''])],
    ['queue id a number', () => hello([1 as unknown as string])],
    ['capacity -1', (q) => hello([q], { capacity: -1 })],
    ['capacity 1025', (q) => hello([q], { capacity: 1025 })],
    ['capacity 1.5', (q) => hello([q], { capacity: 1.5 })],
    ['capacity "4"', (q) => hello([q], { capacity: '4' })],
    ['capacity null', (q) => hello([q], { capacity: null })],
    ['capacity missing', (q) => { const h: Record<string, unknown> = hello([q]); delete h.capacity; return h; }],
    ['unknown field', (q) => hello([q], { extra: true })],
    ['concurrency_keys "true"', (q) => hello([q], { concurrency_keys: 'true' })],
    ['concurrency_keys 1', (q) => hello([q], { concurrency_keys: 1 })],
    ['handlers an object', (q) => hello([q], { handlers: { handler: 'h', versions: ['v1'] } })],
    ['handlers empty', (q) => hello([q], { handlers: [] })],
    ['handler without versions', (q) => hello([q], { handlers: [{ handler: 'h' }] })],
    ['handler with empty versions', (q) => hello([q], { handlers: [{ handler: 'h', versions: [] }] })],
    ['handler with an unknown field', (q) => hello([q], { handlers: [{ handler: 'h', versions: ['v1'], weight: 1 }] })],
    ['handler name with a space', (q) => hello([q], { handlers: [{ handler: 'bad handler', versions: ['v1'] }] })],
    ['handler versions a string', (q) => hello([q], { handlers: [{ handler: 'h', versions: 'v1' }] })],
    ['handler a string', (q) => hello([q], { handlers: ['h@v1'] })],
    ['resume a string', (q) => hello([q], { resume: hex32() })],
    ['resume with an empty id', (q) => hello([q], { resume: [''] })],
    ['resume 1025 ids', (q) => hello([q], { resume: Array.from({ length: 1025 }, () => hex32()) })],
    ['agent empty', (q) => hello([q], { agent: '' })],
    ['agent 65 chars', (q) => hello([q], { agent: 'a'.repeat(65) })],
    ['type "HELLO"', (q) => hello([q], { type: 'HELLO' })],
  ];

  it.each(badHellos)('invalid hello: %s → PROTOCOL_ERROR, 1002', async (_name, make) => {
    const w = await openRaw(gw.url, t.token);
    w.send(make(t.queue_id));
    await expectFatal(w, 'PROTOCOL_ERROR', 1002);
  });

  it('boundary values are accepted: 64-char worker_id, capacity 0 and 1024, 64 queues, 64-char agent', async () => {
    const many = await newTenant(db, { queues: Array.from({ length: 64 }, (_, i) => `q${i}`) });
    const w = await openRaw(gw.url, many.token);
    w.send(hello(Object.values(many.queues), { worker_id: 'A.b_c:d-' + 'x'.repeat(56), capacity: 1024, agent: 'a'.repeat(64) }));
    const ok = await w.next('hello.ok');
    expect(ok.worker_id).toHaveLength(64);
    w.close();
    const { w: w0 } = await session(gw.url, t, { capacity: 0 });
    w0.close();
  });

  it('a queue of another namespace → NOT_FOUND fatal', async () => {
    const other = await newTenant(db);
    const w = await openRaw(gw.url, t.token);
    w.send(hello([other.queue_id]));
    await expectFatal(w, 'NOT_FOUND', 1008);
  });

  it('a nonexistent queue (also among valid ones) → NOT_FOUND fatal', async () => {
    for (const queues of [[hex32()], ['not-a-queue-id'], [t.queue_id, hex32()]]) {
      const w = await openRaw(gw.url, t.token);
      w.send(hello(queues));
      await expectFatal(w, 'NOT_FOUND', 1008);
    }
  });

  it('a queue outside the credential queue_ids → PERMISSION_DENIED fatal', async () => {
    const tn = await newTenant(db, { queues: ['a', 'b'] });
    const c = await credential(tn, ['workers:connect', 'workers:consume'], [tn.queues.a!]);
    const w = await openRaw(gw.url, c.token);
    w.send(hello([tn.queues.a!, tn.queues.b!]));
    await expectFatal(w, 'PERMISSION_DENIED', 1008);
    // The authorized queue alone is fine.
    const w2 = await openRaw(gw.url, c.token);
    w2.send(hello([tn.queues.a!]));
    await w2.next('hello.ok');
    w2.close();
  });

  it('a retired queue → RESOURCE_RETIRED fatal', async () => {
    const tn = await newTenant(db, { queues: ['live', 'gone'] });
    await db.pool.query('UPDATE queues SET retired_at = UTC_TIMESTAMP(3) WHERE id = ?', [tn.queues.gone]);
    const w = await openRaw(gw.url, tn.token);
    w.send(hello([tn.queues.live!, tn.queues.gone!]));
    await expectFatal(w, 'RESOURCE_RETIRED', 1008);
  });

  it('concurrency_keys is frozen per worker_id: a different value → STATE_CONFLICT, 4409; the same value is fine', async () => {
    const id = `frozen-${hex32().slice(0, 8)}`;
    const { w: w1 } = await session(gw.url, t, { worker_id: id, capacity: 0, concurrency_keys: true });
    for (const flag of [false, undefined]) {
      const w = await openRaw(gw.url, t.token);
      w.send(hello([t.queue_id], { worker_id: id, capacity: 0, ...(flag === undefined ? {} : { concurrency_keys: flag }) }));
      await expectFatal(w, 'STATE_CONFLICT', 4409);
    }
    // The refused hello did not supersede the live session.
    expect(w1.ws.readyState).toBe(WebSocket.OPEN);
    const [idrows] = await db.pool.query<RowDataPacket[]>('SELECT concurrency_keys FROM worker_identities WHERE worker_id = ?', [id]);
    expect(idrows).toEqual([{ concurrency_keys: 1 }]);
    // The same value is accepted (and supersedes the older session, which gets 4409).
    const { w: w2 } = await session(gw.url, t, { worker_id: id, capacity: 0, concurrency_keys: true });
    expect((await w1.closed).code).toBe(4409);
    w2.close();
    await w2.closed;
    const { w: w3 } = await session(gw.url, t, { worker_id: id, capacity: 0, concurrency_keys: true });
    w3.close();

    // Recorded as false by a first hello without the flag.
    const id2 = `frozen-${hex32().slice(0, 8)}`;
    const { w: a } = await session(gw.url, t, { worker_id: id2, capacity: 0 });
    a.close();
    await a.closed;
    const b = await openRaw(gw.url, t.token);
    b.send(hello([t.queue_id], { worker_id: id2, capacity: 0, concurrency_keys: true }));
    await expectFatal(b, 'STATE_CONFLICT', 4409);
    const { w: c } = await session(gw.url, t, { worker_id: id2, capacity: 0, concurrency_keys: false });
    c.close();
  });
});

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
    ['result error with an unknown field', JSON.stringify({ type: 'result', attempt_id: 'x', outcome: 'failed', error: { code: 'X', message: 'm', stack: 's' } })],
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
    const { w } = await session(gw.url, t, { capacity: 0 });
    w.sendRaw(text);
    await expectFatal(w, 'PROTOCOL_ERROR', 1002);
  });

  it('a binary frame → PROTOCOL_ERROR, 1003 (before and after hello)', async () => {
    const { w } = await session(gw.url, t, { capacity: 0 });
    w.sendRaw(Buffer.from(JSON.stringify({ type: 'drain' })), true);
    await expectFatal(w, 'PROTOCOL_ERROR', 1003);
    const w2 = await openRaw(gw.url, t.token);
    w2.sendRaw(Buffer.from(JSON.stringify(hello([t.queue_id]))), true);
    await expectFatal(w2, 'PROTOCOL_ERROR', 1003);
  });

  it('a frame over max_frame_bytes → 1009; one just under is handled', async () => {
    const { w } = await session(gw.url, t, { capacity: 0 });
    // Under the limit: a well-formed result for an unknown attempt is answered, not cut.
    const id = hex32();
    const under = JSON.stringify({ type: 'result', attempt_id: id, outcome: 'succeeded', output: { pad: 'x'.repeat(200_000) } });
    expect(Buffer.byteLength(under)).toBeLessThan(MAX_FRAME);
    w.sendRaw(under);
    expect(await w.next('error')).toEqual({ type: 'error', code: 'NOT_FOUND', message: expect.any(String), attempt_id: id, fatal: false });
    w.sendRaw(JSON.stringify({ type: 'result', attempt_id: hex32(), outcome: 'succeeded', output: { pad: 'x'.repeat(400_000) } }));
    expect((await w.closed).code).toBe(1009);

    const w2 = await openRaw(gw.url, t.token);
    w2.sendRaw('x'.repeat(400_000));
    expect((await w2.closed).code).toBe(1009);
  });
});

// ---- per-attempt errors -------------------------------------------------------------------------

describe('per-attempt errors are not fatal', () => {
  it('start / result for an unknown attempt → NOT_FOUND with attempt_id; the session keeps working', async () => {
    const tn = await newTenant(db);
    const { w } = await session(gw.url, tn, { capacity: 2 });
    const ids = [hex32(), 'not-hex'];
    for (const id of ids) {
      w.send({ type: 'start', attempt_id: id });
      expect(await w.next('error')).toEqual({ type: 'error', code: 'NOT_FOUND', message: expect.any(String), attempt_id: id, fatal: false });
      w.send({ type: 'result', attempt_id: id, outcome: 'succeeded', output: 1 });
      expect(await w.next('error')).toEqual({ type: 'error', code: 'NOT_FOUND', message: expect.any(String), attempt_id: id, fatal: false });
    }
    w.send({ type: 'renew', attempt_ids: ids });
    expect(await w.next('renew.ok')).toEqual({ type: 'renew.ok', leases: [], lost: ids });
    const task = await submit(tn);
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
    const tn = await newTenant(db);
    const { w: owner } = await session(gw.url, tn, { capacity: 1 });
    const task = await submit(tn);
    const a = await owner.next('task.assign');
    expect(a.task.id).toBe(task.id);
    const before = await attemptRow(a.attempt_id);
    expect(before.state).toBe('LEASED');

    const { w: thief } = await session(gw.url, tn, { capacity: 0 });
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
    const tn = await newTenant(db);
    const { w, ok } = await session(gw.url, tn, { capacity: 2 });
    const t1 = await submit(tn);
    const t2 = await submit(tn);
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
    const row = await until(() => sessionRow(ok.session_id), (r) => r?.state === 'CLOSED');
    expect(row).toMatchObject({ state: 'CLOSED', close_code: 1002 });
    expect([await attemptRow(running.attempt_id), await attemptRow(leased.attempt_id)]).toEqual(before);
    expect(await taskState(t1.id)).toBe('RUNNING');
    expect(await taskState(t2.id)).toBe('LEASED');
    const [q] = await db.pool.query<RowDataPacket[]>('SELECT active_attempts FROM queues WHERE id = ?', [tn.queue_id]);
    expect(Number(q[0]!.active_attempts)).toBe(2);
  });
});

// ---- intake control -----------------------------------------------------------------------------

describe('intake', () => {
  it('capacity 0 pauses intake; capacity 1 resumes it; capacity bounds LEASED+RUNNING', async () => {
    const tn = await newTenant(db);
    const { w } = await session(gw.url, tn, { capacity: 0 });
    const t1 = await submit(tn);
    await expectNothing(w, 'task.assign');
    expect(await taskState(t1.id)).toBe('WAITING');
    w.send({ type: 'capacity', capacity: 1 });
    const a1 = await w.next('task.assign');
    expect(a1.task.id).toBe(t1.id);
    const t2 = await submit(tn);
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
    const t3 = await submit(tn);
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
    const tn = await newTenant(db);
    const { w, ok } = await session(gw.url, tn, { capacity: 4 });
    await submit(tn);
    const a = await w.next('task.assign');
    w.send({ type: 'drain' });
    expect(await w.next('drain.ok')).toEqual({ type: 'drain.ok' });
    const t2 = await submit(tn);
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
    expect(await until(() => sessionRow(ok.session_id), (r) => r?.state === 'CLOSED')).toMatchObject({ close_code: 1000 });
    // Another worker takes the waiting task.
    const { w: w2 } = await session(gw.url, tn);
    expect((await w2.next('task.assign')).task.id).toBe(t2.id);
    w2.close();
  });

  it('hello.handlers assigns only matching handler@version', async () => {
    const tn = await newTenant(db);
    const a1 = await submit(tn, { handler: 'a', handler_version: 'v1' });
    const b2 = await submit(tn, { handler: 'b', handler_version: 'v2' });
    const a2 = await submit(tn, { handler: 'a', handler_version: 'v2' });
    const c3 = await submit(tn, { handler: 'c', handler_version: 'v3' });
    const { w } = await session(gw.url, tn, { capacity: 10, handlers: [{ handler: 'a', versions: ['v2'] }, { handler: 'c', versions: ['v1', 'v3'] }] });
    const got = [await w.next('task.assign'), await w.next('task.assign')].map((f) => f.task);
    expect(got.map((x) => x.id).sort()).toEqual([a2.id, c3.id].sort());
    for (const x of got) expect(`${x.handler}@${x.handler_version}`).toMatch(/^(a@v2|c@v3)$/);
    await expectNothing(w, 'task.assign');
    expect(await taskState(a1.id)).toBe('WAITING');
    expect(await taskState(b2.id)).toBe('WAITING');
    w.close();
    // Without a filter, everything is eligible.
    const { w: all } = await session(gw.url, tn, { capacity: 10 });
    const rest = [await all.next('task.assign'), await all.next('task.assign')].map((f) => f.task.id);
    expect(rest.sort()).toEqual([a1.id, b2.id].sort());
    all.close();
  });

  it('keyed tasks never go to a session without concurrency_keys; unkeyed ones do', async () => {
    const tn = await newTenant(db);
    const keyed = await submit(tn, { concurrency_key: 'object/7' });
    const plain = await submit(tn);
    for (const flag of [false, undefined]) {
      const { w } = await session(gw.url, tn, { capacity: 4, ...(flag === undefined ? {} : { concurrency_keys: flag }) });
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
    const { w: capable } = await session(gw.url, tn, { capacity: 4, concurrency_keys: true });
    const a = await capable.next('task.assign');
    expect(a.task.id).toBe(keyed.id);
    expect(a.task.concurrency_key).toBe('object/7');
    expect(a.concurrency_token).toMatch(/^[1-9][0-9]*$/);
    capable.close();
  });
});

// ---- credential revocation ----------------------------------------------------------------------

describe('credential revoked while connected', () => {
  it('the live session gets UNAUTHENTICATED and close 1008; its attempts are untouched', async () => {
    const tn = await newTenant(db);
    const c = await credential(tn, ['workers:connect', 'workers:consume']);
    const other = await credential(tn, ['workers:connect', 'workers:consume']);
    const w = await openRaw(gw.url, c.token);
    w.send(hello([tn.queue_id], { capacity: 1 }));
    const ok = await w.next('hello.ok');
    const { w: bystander } = await session(gw.url, { ...tn, token: other.token }, { capacity: 0 });
    await submit(tn);
    const a = await w.next('task.assign');
    const before = await attemptRow(a.attempt_id);
    expect(await revokeCredential(db.pool, c.id)).toBe(true);
    const err = await w.next('error', 5000);
    expect(err).toMatchObject({ type: 'error', code: 'UNAUTHENTICATED', fatal: true });
    expect((await w.closed).code).toBe(1008);
    expect(await until(() => sessionRow(ok.session_id), (r) => r?.state === 'CLOSED')).toMatchObject({ close_code: 1008 });
    expect(await attemptRow(a.attempt_id)).toEqual(before);
    // Sessions of other credentials are not affected.
    expect(bystander.ws.readyState).toBe(WebSocket.OPEN);
    bystander.close();
  });
});

// ---- heartbeats ---------------------------------------------------------------------------------

describe('pings', () => {
  it('the gateway pings; a client that answers stays open', async () => {
    const { w } = await session(fast.url, t, { capacity: 0 });
    let pings = 0;
    w.ws.on('ping', () => pings++);
    await expectNothing(w, 'error', PING_MS * 6);
    expect(pings).toBeGreaterThanOrEqual(3);
    expect(w.ws.readyState).toBe(WebSocket.OPEN);
    w.close();
  });

  it('a client that does not answer pongs is closed within a few intervals', async () => {
    const ws = new WebSocket(fast.url.replace(/^http/, 'ws') + '/v1/workers/connect', ['orbit.worker.v1'], {
      headers: { authorization: `Bearer ${t.token}` },
      autoPong: false,
    });
    let pings = 0;
    ws.on('ping', () => pings++);
    const closed = new Promise<{ code: number; at: number }>((r) => ws.once('close', (code) => r({ code, at: Date.now() })));
    const helloOk = new Promise<any>((r) => ws.on('message', (d) => { const f = JSON.parse(d.toString()); if (f.type === 'hello.ok') r(f); }));
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify(hello([t.queue_id], { capacity: 0 })));
    await helloOk;
    const since = Date.now();
    const c = await closed;
    expect(pings).toBeGreaterThanOrEqual(2);
    expect(c.code).toBe(1006); // terminated, no close frame
    expect(c.at - since).toBeLessThan(PING_MS * 6);
  });
});
