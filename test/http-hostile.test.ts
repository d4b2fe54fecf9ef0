// Contract: hostile or broken input gets a 4xx envelope (never a 5xx, never a crash), changes
// nothing, and the gateway keeps serving afterwards.
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { expectData, expectError, rawRequest, taskBody } from './support/contract.js';
import { dbDiff, dbState } from './support/fuzz-harness.js';

let host: string;

const f = useGatewayFixture();
beforeAll(async () => {
  host = new URL(f.gw.url).host;
});

async function taskCount(): Promise<number> {
  const [[r]] = (await f.db.pool.query('SELECT COUNT(*) AS n FROM tasks')) as any;
  return Number(r.n);
}

/** Everything the posted commands (submit, create queue, pause, resume) could write. */
const STORED = ['tasks', 'queues', 'receipts', 'audit_log', 'result_events'];

/** The gateway still answers a normal submit and read. */
async function stillServing(): Promise<void> {
  const task = expectData(await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey('alive'), body: taskBody(f.t.queue_id) }), 201).task;
  expectData(await call(f.gw.url, 'GET', `/v1/tasks/${task.id}`, { token: f.t.token }), 200);
  expect(f.gw.child.exitCode).toBeNull();
}

function head(method: string, path: string, extra: string[] = []): string {
  return (
    [`${method} ${path} HTTP/1.1`, `Host: ${host}`, `Authorization: Bearer ${f.t.token}`, `Idempotency-Key: ${ikey('raw')}`, ...extra].join('\r\n') + '\r\n'
  );
}

/** A response written on a raw socket carries the envelope and X-Request-Id. */
function expectRawEnvelope(r: { status: number | null; headers: Record<string, string>; body: string }, status: number, code: string): void {
  expect(r.status).toBe(status);
  const parsed = JSON.parse(r.body);
  expect(parsed.error.code).toBe(code);
  expect(typeof parsed.request_id).toBe('string');
  expect(r.headers['x-request-id']).toBe(parsed.request_id);
}

describe('bodies', () => {
  it('random bytes as the body of every command → 4xx envelope, nothing stored', async () => {
    const before = await dbState(f.db.pool, STORED);
    const paths = ['/v1/tasks', '/v1/queues', `/v1/queues/${f.t.queue_id}:pause`, `/v1/queues/${f.t.queue_id}:resume`];
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 2048 }), fc.constantFrom(...paths), async (bytes, path) => {
        const r = await call(f.gw.url, 'POST', path, { token: f.t.token, key: ikey('rnd'), rawBody: Buffer.from(bytes) });
        expect(r.status).toBeGreaterThanOrEqual(400);
        expect(r.status).toBeLessThan(500);
        expect(r.headers.get('x-request-id')).toBe(r.body.request_id);
        expect(typeof r.body.error.code).toBe('string');
      }),
      { numRuns: 120, seed: 20261130 },
    );
    // No task, queue, revision (pause/resume), receipt or audit row: counts and content.
    expect(dbDiff(before, await dbState(f.db.pool, STORED), 'none')).toEqual([]);
    await stillServing();
  });

  it('random JSON values as the body → 400, never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (v) => {
        const r = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey('json'), rawBody: JSON.stringify(v) ?? 'null' });
        expectError(r, 400, 'INVALID_ARGUMENT');
      }),
      { numRuns: 100, seed: 7 },
    );
  });

  it('random values in every submit field → 201 or 4xx, never 5xx', async () => {
    const anyJson = fc.jsonValue({ maxDepth: 3 });
    const field = <T>(arb: fc.Arbitrary<T>) => fc.option(fc.oneof(arb, anyJson), { nil: undefined });
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            queue_id: fc.oneof(fc.constant(f.t.queue_id), anyJson),
            handler: field(fc.stringMatching(/^[A-Za-z0-9._:-]{0,130}$/)),
            handler_version: field(fc.string()),
            payload_version: field(fc.constant('v1')),
            payload: anyJson,
            business_key: field(fc.string({ unit: 'binary', maxLength: 200 })),
            concurrency_key: field(fc.string({ unit: 'binary', maxLength: 200 })),
            priority: field(fc.integer({ min: -3, max: 12 })),
            max_attempts: field(fc.integer({ min: -1, max: 102 })),
            deadline_seconds: field(fc.integer({ min: -1, max: 2592002 })),
            not_before: field(fc.date({ noInvalidDate: true }).map((d) => d.toISOString())),
          },
          { requiredKeys: [] },
        ),
        async (body) => {
          const r = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey('fuzz'), body });
          if (r.status !== 201) {
            expect(r.status).toBeGreaterThanOrEqual(400);
            expect(r.status).toBeLessThan(500);
            expect(r.body.error.code).toMatch(/^(INVALID_ARGUMENT|NOT_FOUND|PAYLOAD_TOO_LARGE)$/);
          }
          expect(r.headers.get('x-request-id')).toBe(r.body.request_id);
        },
      ),
      { numRuns: 150, seed: 42 },
    );
  });

  it('a deeply nested payload is a 4xx, not a 500', async () => {
    const before = await taskCount();
    for (const depth of [5_000, 100_000, 400_000]) {
      const payload = '['.repeat(depth) + ']'.repeat(depth);
      const raw = JSON.stringify(taskBody(f.t.queue_id, { payload: 0 })).replace('"payload":0', `"payload":${payload}`);
      expectError(await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey('deep'), rawBody: raw }), 400, 'INVALID_ARGUMENT');
    }
    expect(await taskCount()).toBe(before);
    // Moderate nesting (the body object + 100 levels of payload) is ordinary JSON and accepted.
    const ok = '['.repeat(100) + '"x"' + ']'.repeat(100);
    const raw = JSON.stringify(taskBody(f.t.queue_id, { payload: 0 })).replace('"payload":0', `"payload":${ok}`);
    const task = expectData(await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey('deep'), rawBody: raw }), 201).task;
    expect(JSON.stringify(task.payload)).toBe(ok);
    const deepObject = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
    const r = await call(f.gw.url, 'POST', '/v1/queues', { token: f.t.token, key: ikey('deep'), rawBody: `{"name":"deep","retry":${deepObject}}` });
    expectError(r, 400, 'INVALID_ARGUMENT');
    await stillServing();
  });

  it('a body that is a JSON array, string, number or null → 400', async () => {
    for (const raw of ['[]', '[' + JSON.stringify(taskBody(f.t.queue_id)) + ']', '"' + 'x'.repeat(1000) + '"', '42', 'null', 'false']) {
      expectError(await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), rawBody: raw }), 400, 'INVALID_ARGUMENT');
    }
    await stillServing();
  });

  it('duplicate JSON keys and __proto__ do not smuggle fields', async () => {
    const base = JSON.stringify(taskBody(f.t.queue_id));
    const proto = base.replace(/}$/, ',"__proto__":{"priority":9}}');
    expectError(await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), rawBody: proto }), 400, 'INVALID_ARGUMENT');
    const inPayload = JSON.stringify(taskBody(f.t.queue_id, { payload: 0 })).replace('"payload":0', '"payload":{"__proto__":{"priority":9},"ok":2}');
    const task = expectData(await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), rawBody: inPayload }), 201).task;
    const read = expectData(await call(f.gw.url, 'GET', `/v1/tasks/${task.id}`, { token: f.t.token }), 200).task;
    expect(JSON.stringify(read.payload)).toBe('{"__proto__":{"priority":9},"ok":2}');
    // The gateway process itself is not polluted: had either body reached Object.prototype there,
    // a submit without a priority would read the inherited 9 (submit-input.ts: `priority ?? 0`).
    const plain = expectData(await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), body: taskBody(f.t.queue_id) }), 201).task;
    expect(plain.priority).toBe(0);
    expect(expectData(await call(f.gw.url, 'GET', `/v1/tasks/${plain.id}`, { token: f.t.token }), 200).task.priority).toBe(0);
  });
});

describe('broken HTTP', () => {
  it('huge headers → 400 envelope with X-Request-Id, then the gateway keeps serving', async () => {
    const r = await rawRequest(f.gw.url, head('GET', '/v1/tasks', [`X-Junk: ${'j'.repeat(40 * 1024)}`, 'Connection: close']) + '\r\n');
    expectRawEnvelope(r, 400, 'INVALID_ARGUMENT');
    const viaFetch = await call(f.gw.url, 'GET', '/v1/tasks', { token: f.t.token, headers: { 'x-junk': 'k'.repeat(20 * 1024) } });
    expectError(viaFetch, 400, 'INVALID_ARGUMENT');
    await stillServing();
  });

  it('a truncated body (Content-Length larger than what arrives, then close) changes nothing', async () => {
    const before = await taskCount();
    const body = JSON.stringify(taskBody(f.t.queue_id));
    for (const cut of [0, 1, Math.floor(body.length / 2), body.length - 1]) {
      const r = await rawRequest(
        f.gw.url,
        head('POST', '/v1/tasks', ['Content-Type: application/json', `Content-Length: ${body.length}`]) + '\r\n' + body.slice(0, cut),
        { end: true },
      );
      // The client went away: whatever the server wrote, if anything, is not a 5xx.
      if (r.status !== null) expect(r.status).toBeLessThan(500);
    }
    expect(await taskCount()).toBe(before);
    await stillServing();
  });

  it('a truncated chunked body changes nothing', async () => {
    const before = await taskCount();
    const body = JSON.stringify(taskBody(f.t.queue_id));
    const r = await rawRequest(
      f.gw.url,
      head('POST', '/v1/tasks', ['Content-Type: application/json', 'Transfer-Encoding: chunked']) +
        '\r\n' +
        body.length.toString(16) +
        '\r\n' +
        body.slice(0, 20),
      { end: true },
    );
    if (r.status !== null) expect(r.status).toBeLessThan(500);
    expect(await taskCount()).toBe(before);
    await stillServing();
  });

  it('malformed chunked encoding → 400 envelope', async () => {
    const r = await rawRequest(
      f.gw.url,
      head('POST', '/v1/tasks', ['Content-Type: application/json', 'Transfer-Encoding: chunked', 'Connection: close']) + '\r\nzz\r\n{}\r\n0\r\n\r\n',
    );
    expectRawEnvelope(r, 400, 'INVALID_ARGUMENT');
    await stillServing();
  });

  it('garbage request lines, bad header bytes and unknown methods → 400 envelope', async () => {
    const inputs = [
      'NOT HTTP AT ALL\r\n\r\n',
      'GET /v1/tasks HTTP/9.9\r\n\r\n',
      `GET /v1/tasks HTTP/1.1\r\nHost: ${host}\r\nBad Header Name: x\r\n\r\n`,
      `GET /v1/tasks HTTP/1.1\r\nHost: ${host}\r\nX-Ctl: a\u0001b\r\n\r\n`,
      `GET /v1/ta\u0000sks HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
      `BREW /v1/tasks HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
      `POST /v1/tasks HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!`,
      `POST /v1/tasks HTTP/1.1\r\nHost: ${host}\r\nContent-Length: -1\r\n\r\n`,
      Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03]), // a TLS ClientHello
    ];
    for (const input of inputs) {
      const r = await rawRequest(f.gw.url, input);
      expectRawEnvelope(r, 400, 'INVALID_ARGUMENT');
    }
    await stillServing();
  });

  it('pipelined requests on one connection are all answered in order', async () => {
    const a = head('GET', `/v1/queues/${f.t.queue_id}`) + '\r\n';
    const b = head('GET', '/healthz') + 'Connection: close\r\n\r\n';
    const r = await rawRequest(f.gw.url, a + b, { untilClose: true });
    const statuses = [...r.raw.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
    expect(statuses).toEqual([200, 200]);
  });

  it('garbage pipelined after a valid request never corrupts the valid response', async () => {
    const valid = head('GET', `/v1/queues/${f.t.queue_id}`) + '\r\n';
    const r = await rawRequest(f.gw.url, valid + 'NOT HTTP AT ALL\r\n\r\n', { untilClose: true });
    expect(r.status).toBe(200);
    const len = Number(r.headers['content-length']);
    const first = JSON.parse(r.body.slice(0, len));
    expect(first.data.queue.id).toBe(f.t.queue_id);
    // Whatever follows the complete first response is either nothing or a whole second response.
    const rest = r.body.slice(len);
    if (rest.length > 0) expect(rest).toMatch(/^HTTP\/1\.1 400 /);
    await stillServing();
  });

  it('HTTP/1.0 without Host works', async () => {
    const r = await rawRequest(f.gw.url, `GET /healthz HTTP/1.0\r\n\r\n`);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).data.status).toBe('ok');
  });

  it('an oversized body on a raw socket → 413 envelope, and the connection stays usable', async () => {
    const size = 2 * 1024 * 1024;
    const r = await rawRequest(
      f.gw.url,
      Buffer.concat([Buffer.from(head('POST', '/v1/tasks', ['Content-Type: application/json', `Content-Length: ${size}`]) + '\r\n'), Buffer.alloc(size, 0x20)]),
    );
    expectRawEnvelope(r, 413, 'PAYLOAD_TOO_LARGE');
    expect(r.headers.connection ?? 'keep-alive').not.toBe('close');
    await stillServing();
  });

  it('odd paths are 404 envelopes', async () => {
    for (const p of [
      '/v1/tasks/../queues',
      '//v1/tasks',
      '/v1/tasks/%2e%2e',
      `/v1/tasks/${'a'.repeat(8000)}`,
      '/v1/tasks/%00',
      '/%ff',
      '/v1/queues/x:pause:pause',
    ]) {
      // On a raw socket: fetch would resolve the dot segments (`..`, `%2e%2e`) before sending.
      const r = await rawRequest(f.gw.url, head('GET', p, ['Connection: close']) + '\r\n');
      expect([p, r.status], r.body.slice(0, 300)).toEqual([p, 404]);
      expectRawEnvelope(r, 404, 'NOT_FOUND');
    }
  });

  it('an absolute-form target routes like its path (RFC 9112 §3.2.2), its dot segments still 404', async () => {
    const origin = new URL(f.gw.url).origin;
    const ok = await rawRequest(f.gw.url, head('GET', `${origin}/v1/openapi.json`, ['Connection: close']) + '\r\n');
    expect(ok.status, ok.body.slice(0, 300)).toBe(200);
    const odd = await rawRequest(f.gw.url, head('GET', `${origin}/v1/tasks/../openapi.json`, ['Connection: close']) + '\r\n');
    expectRawEnvelope(odd, 404, 'NOT_FOUND');
  });
});

describe('after all of the above', () => {
  it('the gateway answered no request with a 5xx and logged no internal error', async () => {
    await stillServing();
    const m = await call(f.gw.url, 'GET', '/metrics');
    const fives = [...m.text.matchAll(/^orbit_http_requests_total\{[^}]*status="5\d\d"[^}]*\} (\d+)/gm)];
    expect(fives.map((x) => x[0])).toEqual([]);
    expect(f.gw.output.filter((l) => /internal error|uncaught|unhandled/i.test(l))).toEqual([]);
  });
});
