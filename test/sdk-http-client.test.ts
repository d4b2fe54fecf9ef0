// The SDK's HTTP client against a local recording server that answers with the facade's
// envelope (docs/http-api.md): paths, headers, Idempotency-Key, error mapping, uint64 strings.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, OrbitApiError } from '../worker-sdk/index.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}
let server: http.Server;
let base = '';
const seen: Seen[] = [];
let reply: (s: Seen) => { status: number; body: string; headers?: Record<string, string> } = () => ({ status: 200, body: '{}' });

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const s = { method: req.method!, url: req.url!, headers: req.headers, body };
      seen.push(s);
      const r = reply(s);
      res.writeHead(r.status, { 'content-type': 'application/json', 'x-request-id': 'req-1', ...r.headers });
      res.end(r.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const ok =
  (data: unknown, status = 200) =>
  () => ({ status, body: JSON.stringify({ request_id: 'req-1', data }) });
const client = () => createClient({ url: base, token: 'tok' });
const Q = '11111111111111111111111111111111';

describe('http client', () => {
  it('submitTask sends the body, Bearer token and Idempotency-Key, and returns data', async () => {
    const task = { id: Q, state: 'WAITING', concurrency_key: 'object/42' };
    reply = ok({ task, deduplicated: false }, 201);
    const body = { queue_id: Q, handler: 'object.update', handler_version: 'v1', payload_version: 'v1', payload: { a: 1 }, concurrency_key: 'object/42' };
    const r = await client().submitTask(body, { idempotencyKey: 'update-42-001' });
    expect(r).toEqual({ task, deduplicated: false });
    const s = seen.at(-1)!;
    expect(s.method).toBe('POST');
    expect(s.url).toBe('/v1/tasks');
    expect(s.headers.authorization).toBe('Bearer tok');
    expect(s.headers['idempotency-key']).toBe('update-42-001');
    expect(s.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(s.body)).toEqual(body);
  });

  it('commands require an explicit, valid Idempotency-Key (nothing is sent otherwise)', async () => {
    const before = seen.length;
    const body = { queue_id: Q, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: null };
    await expect(client().submitTask(body, undefined as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', status: 0 });
    await expect(client().submitTask(body, { idempotencyKey: 'has space' })).rejects.toBeInstanceOf(OrbitApiError);
    await expect(client().cancelTask(Q, {}, { idempotencyKey: '' })).rejects.toBeInstanceOf(OrbitApiError);
    expect(seen.length).toBe(before);
  });

  it('paths of commands and reads', async () => {
    reply = ok({});
    const c = client();
    const key = { idempotencyKey: 'k-1' };
    await c.cancelTask(Q, { reason: 'no longer needed' }, key);
    await c.resolveTask(Q, { resolution: 'retry' }, key);
    await c.pauseQueue(Q, { expected_revision: 3n }, key);
    await c.resumeQueue(Q, { expected_revision: '4' }, key);
    await c.retireQueue(Q, { expected_revision: '5', reason: 'done' }, key);
    await c.createSubscription({ name: 's', queue_id: Q, event_types: ['task.succeeded'] }, key);
    await c.pauseSubscription(Q, { expected_revision: '1' }, key);
    await c.resumeSubscription(Q, { expected_revision: '2' }, key);
    await c.retireSubscription(Q, { expected_revision: '3', reason: 'r' }, key);
    await c.listTasks({ queue_id: Q, concurrency_key: 'object/42', limit: 10 });
    await c.listDeliveries(Q, { state: 'LEASED' });
    const got = seen.slice(-11).map((s) => `${s.method} ${s.url}`);
    expect(got).toEqual([
      `POST /v1/tasks/${Q}:cancel`,
      `POST /v1/tasks/${Q}:resolve`,
      `POST /v1/queues/${Q}:pause`,
      `POST /v1/queues/${Q}:resume`,
      `POST /v1/queues/${Q}:retire`,
      'POST /v1/subscriptions',
      `POST /v1/subscriptions/${Q}:pause`,
      `POST /v1/subscriptions/${Q}:resume`,
      `POST /v1/subscriptions/${Q}:retire`,
      `GET /v1/tasks?queue_id=${Q}&concurrency_key=object%2F42&limit=10`,
      `GET /v1/subscriptions/${Q}/deliveries?state=LEASED`,
    ]);
    // Revisions go out as decimal strings, also when given as bigint.
    expect(JSON.parse(seen.at(-9)!.body)).toEqual({ expected_revision: '3' });
  });

  it('lease and ack carry no Idempotency-Key; reads unwrap their object', async () => {
    const c = client();
    reply = ok({ deliveries: [{ id: 'd1', sequence: '18446744073709551615', state: 'LEASED', attempts: 1, lease_expires_at: 't', event: {} }] });
    const d = await c.leaseDeliveries(Q, { max: 10, lease_seconds: 30 });
    expect(d[0]!.sequence).toBe('18446744073709551615'); // uint64 stays a string
    expect(seen.at(-1)!.headers['idempotency-key']).toBeUndefined();
    expect(seen.at(-1)!.url).toBe(`/v1/subscriptions/${Q}/deliveries:lease`);
    reply = ok({ acked: 2 });
    expect(await c.ackDeliveries(Q, ['d1', 'd2'])).toBe(2);
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ delivery_ids: ['d1', 'd2'] });
    reply = ok({ attempts: [{ id: 'a', concurrency_token: '18446744073709551615' }] });
    expect((await c.getTaskAttempts(Q))[0]!.concurrency_token).toBe('18446744073709551615');
    reply = ok({ attempt: { id: 'a' } });
    expect(await c.getAttempt('a')).toEqual({ id: 'a' });
    reply = ok({ queue: { id: Q, revision: '3' } });
    expect(await c.getQueue(Q)).toEqual({ id: Q, revision: '3' });
    reply = ok({ queues: [] });
    expect(await c.listQueues()).toEqual([]);
    reply = ok({ subscriptions: [] });
    expect(await c.listSubscriptions()).toEqual([]);
  });

  it('error envelopes become OrbitApiError with code, status, requestId and details', async () => {
    reply = () => ({
      status: 409,
      body: JSON.stringify({ request_id: 'req-9', error: { code: 'STATE_CONFLICT', message: 'revision mismatch', details: { current_revision: '4' } } }),
    });
    const err = await client()
      .pauseQueue(Q, { expected_revision: '3' }, { idempotencyKey: 'k' })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OrbitApiError);
    expect(err).toMatchObject({ code: 'STATE_CONFLICT', status: 409, requestId: 'req-9', details: { current_revision: '4' }, message: 'revision mismatch' });
    expect(err.retryable).toBe(false);
  });

  it('a non-envelope response and a transport failure are classified', async () => {
    reply = () => ({ status: 503, body: '<html>bad gateway</html>', headers: { 'content-type': 'text/html' } });
    await expect(client().getTask(Q)).rejects.toMatchObject({ code: 'UNAVAILABLE', status: 503, requestId: 'req-1' });
    const dead = createClient({ url: 'http://127.0.0.1:1', token: 't' });
    const err = await dead.getTask(Q).catch((e) => e);
    expect(err).toMatchObject({ code: 'UNAVAILABLE', status: 0 });
    expect(err.retryable).toBe(true);
  });
});
