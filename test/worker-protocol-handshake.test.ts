// Worker protocol contract (docs/worker-protocol.md) over a raw WebSocket: the handshake
// (subprotocol, credential, path) and the hello rules. No SDK, no mocks: a real gateway process and
// its database. Frames after hello, intake and heartbeats: worker-protocol-session.test.ts.
import { beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { RowDataPacket } from 'mysql2/promise';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { hello, openRaw } from './support/raw-worker.js';
import {
  FAST_ENV,
  GW_ENV,
  HELLO_TIMEOUT_MS,
  MAX_FRAME,
  expectFatal,
  expectNothing,
  handshake,
  hex32,
  protocolHelpers,
  session,
} from './support/worker-protocol-fixture.js';
import { waitForValue } from './support/wait.js';
import { revokeCredential } from '../server/db/credentials.js';
import { newToken, type Scope } from '../server/admin/access.js';

/** Short hello timeout and ping interval (f.gw: default timings, small frame limit). */
let fast: GatewayProcess;

const f = useGatewayFixture({ gatewayEnv: GW_ENV });
beforeAll(async () => {
  fast = await startGateway(f.db.dsn, FAST_ENV);
});

const { credential, sessionRow } = protocolHelpers(() => f);

// ---- handshake ----------------------------------------------------------------------------------

describe('handshake', () => {
  it('accepts the subprotocol with a worker credential', async () => {
    expect((await handshake(f.gw.url, { token: f.t.token })).status).toBe(101);
    // Offered among others, the right one is selected.
    const ws = new WebSocket(f.gw.url.replace(/^http/, 'ws') + '/v1/workers/connect', ['x.other', 'orbit.worker.v1'], {
      headers: { authorization: `Bearer ${f.t.token}` },
    });
    await new Promise((r) => ws.once('open', r));
    expect(ws.protocol).toBe('orbit.worker.v1');
    ws.close();
  });

  it('missing subprotocol → 400', async () => {
    const r = await handshake(f.gw.url, { token: f.t.token, protocols: [] });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('INVALID_ARGUMENT');
  });

  it('wrong subprotocol → 400', async () => {
    for (const p of [['orbit.worker.v2'], ['orbit.worker'], ['ORBIT.WORKER.V1']]) {
      const r = await handshake(f.gw.url, { token: f.t.token, protocols: p });
      expect(r.status, p[0]).toBe(400);
      expect(r.body.error.code).toBe('INVALID_ARGUMENT');
    }
  });

  it('no token, malformed header, unknown token → 401', async () => {
    const cases: { token?: string | null; headers?: Record<string, string> }[] = [
      { token: null },
      { headers: { authorization: 'Basic dXNlcjpwYXNz' } },
      { headers: { authorization: 'Bearer short' } },
      { headers: { authorization: `Bearer ${f.t.token} extra` } },
      { token: newToken() },
    ];
    for (const c of cases) {
      const r = await handshake(f.gw.url, c);
      expect(r.status, JSON.stringify(c)).toBe(401);
      expect(r.body.error.code).toBe('UNAUTHENTICATED');
    }
  });

  it('revoked token → 401', async () => {
    const c = await credential(f.t, ['workers:connect', 'workers:consume']);
    expect((await handshake(f.gw.url, { token: c.token })).status).toBe(101);
    expect(await revokeCredential(f.db.pool, c.id)).toBe(true);
    const r = await handshake(f.gw.url, { token: c.token });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('UNAUTHENTICATED');
  });

  it('a credential without workers:connect or workers:consume → 403', async () => {
    for (const scopes of [['workers:connect'], ['workers:consume'], ['tasks:submit', 'tasks:read'], []] as Scope[][]) {
      const c = await credential(f.t, scopes);
      const r = await handshake(f.gw.url, { token: c.token });
      expect(r.status, scopes.join(' ')).toBe(403);
      expect(r.body.error.code).toBe('PERMISSION_DENIED');
    }
  });

  it('wrong path → 404', async () => {
    for (const path of ['/v1/workers/connect/', '/v1/workers', '/v1/tasks', '/', '/v2/workers/connect']) {
      const r = await handshake(f.gw.url, { token: f.t.token, path });
      expect(r.status, path).toBe(404);
      expect(r.body.error.code).toBe('NOT_FOUND');
    }
    // A query string does not change the path.
    expect((await handshake(f.gw.url, { token: f.t.token, path: '/v1/workers/connect?x=1' })).status).toBe(101);
  });

  it('every refusal is the HTTP error envelope: request_id (also X-Request-Id) and the documented code', async () => {
    const noScope = await credential(f.t, ['tasks:read']);
    const cases: { opts: Parameters<typeof handshake>[1]; status: number; code: string }[] = [
      { opts: { token: f.t.token, path: '/v1/workers' }, status: 404, code: 'NOT_FOUND' },
      { opts: { token: f.t.token, protocols: ['orbit.worker.v2'] }, status: 400, code: 'INVALID_ARGUMENT' },
      { opts: { token: null }, status: 401, code: 'UNAUTHENTICATED' },
      { opts: { token: noScope.token }, status: 403, code: 'PERMISSION_DENIED' },
    ];
    const seen = new Set<string>();
    for (const c of cases) {
      const r = await handshake(f.gw.url, c.opts);
      expect(r.status, c.code).toBe(c.status);
      expect(Object.keys(r.body).sort(), c.code).toEqual(['error', 'request_id']);
      expect(r.body.request_id, c.code).toMatch(/^[0-9a-f]{32}$/);
      expect(r.headers['x-request-id'], c.code).toBe(r.body.request_id);
      expect(r.headers['content-type'], c.code).toBe('application/json; charset=utf-8');
      expect(r.body.error.code, c.code).toBe(c.code);
      expect(typeof r.body.error.message, c.code).toBe('string');
      seen.add(r.body.request_id);
    }
    // One id per refused handshake.
    expect(seen.size).toBe(cases.length);
  });
});

// ---- hello --------------------------------------------------------------------------------------

describe('hello', () => {
  it('hello.ok has exactly the documented fields', async () => {
    const tn = await newTenant(f.db);
    await f.db.pool.query('UPDATE queues SET lease_seconds = 45 WHERE id = ?', [tn.queue_id]);
    const { w, ok } = await session(f.gw.url, tn, { worker_id: 'billing-7f3a-18233-Xk2p', agent: 'raw-test/1' });
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
    const closed = await waitForValue(
      () => sessionRow(ok.session_id),
      (r) => r?.state === 'CLOSED',
    );
    expect(closed).toMatchObject({ state: 'CLOSED', close_code: 1000 });
  });

  it('the default max_frame_bytes is 1 MiB', async () => {
    const { w, ok } = await session(fast.url, f.t, { capacity: 0 });
    expect(ok.max_frame_bytes).toBe(1024 * 1024);
    expect(ok.lease_ms).toBe(30_000);
    w.close();
  });

  it('resume of unknown ids on a fresh identity → all lost', async () => {
    const ids = [hex32(), 'not-an-id'];
    const { w, ok } = await session(f.gw.url, f.t, { capacity: 0, resume: ids });
    expect(ok.resumed).toEqual([]);
    expect(ok.lost).toEqual(ids);
    w.close();
  });

  it('a first frame other than hello → PROTOCOL_ERROR, 1002', async () => {
    for (const frame of [
      { type: 'start', attempt_id: hex32() },
      { type: 'drain' },
      { type: 'capacity', capacity: 1 },
      { type: 'renew', attempt_ids: [hex32()] },
    ]) {
      const w = await openRaw(f.gw.url, f.t.token);
      w.send(frame);
      await expectFatal(w, 'PROTOCOL_ERROR', 1002);
    }
  });

  it('hello twice → PROTOCOL_ERROR, 1002 (after hello.ok and back to back)', async () => {
    const { w } = await session(f.gw.url, f.t, { capacity: 0 });
    w.send(hello([f.t.queue_id], { capacity: 0 }));
    await expectFatal(w, 'PROTOCOL_ERROR', 1002);

    const w2 = await openRaw(f.gw.url, f.t.token);
    const h = hello([f.t.queue_id], { capacity: 0 });
    w2.send(h);
    w2.send(h);
    await expectFatal(w2, 'PROTOCOL_ERROR', 1002);
    // No session of that identity is left OPEN in the database.
    const [rows] = await waitForValue(
      () => f.db.pool.query<RowDataPacket[]>(`SELECT state FROM worker_sessions WHERE worker_id = ? AND state <> 'CLOSED'`, [h.worker_id]),
      ([r]) => r.length === 0,
    );
    expect(rows).toEqual([]);
  });

  it('no hello within the time limit → PROTOCOL_ERROR, 1002', async () => {
    const opened = Date.now();
    const w = await openRaw(fast.url, f.t.token);
    const err = await expectFatal(w, 'PROTOCOL_ERROR', 1002);
    const took = Date.now() - opened;
    expect(err.message).toMatch(/hello/);
    expect(took).toBeGreaterThanOrEqual(HELLO_TIMEOUT_MS - 50);
    expect(took).toBeLessThan(HELLO_TIMEOUT_MS + 3000);
  });

  it('a hello in time is not cut by the hello timer', async () => {
    const { w } = await session(fast.url, f.t, { capacity: 0 });
    await expectNothing(w, 'error', HELLO_TIMEOUT_MS * 3);
    expect(w.ws.readyState).toBe(WebSocket.OPEN);
    w.close();
  });

  const badHellos: [string, (q: string) => Record<string, unknown>][] = [
    ['protocol 2', (q) => hello([q], { protocol: 2 })],
    ['protocol "1"', (q) => hello([q], { protocol: '1' })],
    [
      'protocol missing',
      (q) => {
        const h: Record<string, unknown> = hello([q]);
        delete h.protocol;
        return h;
      },
    ],
    ['worker_id empty', (q) => hello([q], { worker_id: '' })],
    ['worker_id 65 chars', (q) => hello([q], { worker_id: 'w'.repeat(65) })],
    ['worker_id with a space', (q) => hello([q], { worker_id: 'bad id' })],
    ['worker_id with a slash', (q) => hello([q], { worker_id: 'a/b' })],
    ['worker_id non-ASCII', (q) => hello([q], { worker_id: 'wörker' })],
    ['worker_id a number', (q) => hello([q], { worker_id: 7 })],
    [
      'worker_id missing',
      (q) => {
        const h: Record<string, unknown> = hello([q]);
        delete h.worker_id;
        return h;
      },
    ],
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
    [
      'capacity missing',
      (q) => {
        const h: Record<string, unknown> = hello([q]);
        delete h.capacity;
        return h;
      },
    ],
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
    const w = await openRaw(f.gw.url, f.t.token);
    w.send(make(f.t.queue_id));
    await expectFatal(w, 'PROTOCOL_ERROR', 1002);
  });

  it('boundary values are accepted: 64-char worker_id, capacity 0 and 1024, 64 queues, 64-char agent', async () => {
    const many = await newTenant(f.db, { queues: Array.from({ length: 64 }, (_, i) => `q${i}`) });
    const w = await openRaw(f.gw.url, many.token);
    w.send(hello(Object.values(many.queues), { worker_id: 'A.b_c:d-' + 'x'.repeat(56), capacity: 1024, agent: 'a'.repeat(64) }));
    const ok = await w.next('hello.ok');
    expect(ok.worker_id).toHaveLength(64);
    w.close();
    const { w: w0 } = await session(f.gw.url, f.t, { capacity: 0 });
    w0.close();
  });

  it('a queue of another namespace → NOT_FOUND fatal', async () => {
    const other = await newTenant(f.db);
    const w = await openRaw(f.gw.url, f.t.token);
    w.send(hello([other.queue_id]));
    await expectFatal(w, 'NOT_FOUND', 1008);
  });

  it('a nonexistent queue (also among valid ones) → NOT_FOUND fatal', async () => {
    for (const queues of [[hex32()], ['not-a-queue-id'], [f.t.queue_id, hex32()]]) {
      const w = await openRaw(f.gw.url, f.t.token);
      w.send(hello(queues));
      await expectFatal(w, 'NOT_FOUND', 1008);
    }
  });

  it('a queue outside the credential queue_ids → PERMISSION_DENIED fatal', async () => {
    const tn = await newTenant(f.db, { queues: ['a', 'b'] });
    const c = await credential(tn, ['workers:connect', 'workers:consume'], [tn.queues.a!]);
    const w = await openRaw(f.gw.url, c.token);
    w.send(hello([tn.queues.a!, tn.queues.b!]));
    await expectFatal(w, 'PERMISSION_DENIED', 1008);
    // The authorized queue alone is fine.
    const w2 = await openRaw(f.gw.url, c.token);
    w2.send(hello([tn.queues.a!]));
    await w2.next('hello.ok');
    w2.close();
  });

  it('a retired queue → RESOURCE_RETIRED fatal', async () => {
    const tn = await newTenant(f.db, { queues: ['live', 'gone'] });
    await f.db.pool.query('UPDATE queues SET retired_at = UTC_TIMESTAMP(3) WHERE id = ?', [tn.queues.gone]);
    const w = await openRaw(f.gw.url, tn.token);
    w.send(hello([tn.queues.live!, tn.queues.gone!]));
    await expectFatal(w, 'RESOURCE_RETIRED', 1008);
  });

  it('concurrency_keys is frozen per worker_id: a different value → STATE_CONFLICT, 4409; the same value is fine', async () => {
    const id = `frozen-${hex32().slice(0, 8)}`;
    const { w: w1 } = await session(f.gw.url, f.t, { worker_id: id, capacity: 0, concurrency_keys: true });
    for (const flag of [false, undefined]) {
      const w = await openRaw(f.gw.url, f.t.token);
      w.send(hello([f.t.queue_id], { worker_id: id, capacity: 0, ...(flag === undefined ? {} : { concurrency_keys: flag }) }));
      await expectFatal(w, 'STATE_CONFLICT', 4409);
    }
    // The refused hello did not supersede the live session.
    expect(w1.ws.readyState).toBe(WebSocket.OPEN);
    const [idrows] = await f.db.pool.query<RowDataPacket[]>('SELECT concurrency_keys FROM worker_identities WHERE worker_id = ?', [id]);
    expect(idrows).toEqual([{ concurrency_keys: 1 }]);
    // The same value is accepted (and supersedes the older session, which gets 4409).
    const { w: w2 } = await session(f.gw.url, f.t, { worker_id: id, capacity: 0, concurrency_keys: true });
    expect((await w1.closed).code).toBe(4409);
    w2.close();
    await w2.closed;
    const { w: w3 } = await session(f.gw.url, f.t, { worker_id: id, capacity: 0, concurrency_keys: true });
    w3.close();

    // Recorded as false by a first hello without the flag.
    const id2 = `frozen-${hex32().slice(0, 8)}`;
    const { w: a } = await session(f.gw.url, f.t, { worker_id: id2, capacity: 0 });
    a.close();
    await a.closed;
    const b = await openRaw(f.gw.url, f.t.token);
    b.send(hello([f.t.queue_id], { worker_id: id2, capacity: 0, concurrency_keys: true }));
    await expectFatal(b, 'STATE_CONFLICT', 4409);
    const { w: c } = await session(f.gw.url, f.t, { worker_id: id2, capacity: 0, concurrency_keys: false });
    c.close();
  });
});
