// Contract: POST /v1/tasks body and header rules (unknown fields, JSON, UTF-8, Content-Type, query,
// Idempotency-Key), quotas, retired queues and payload numbers. Every rejection changes nothing (no
// task, no receipt) and leaves the Idempotency-Key reusable. Field rules: http-submit-fields.test.ts.
import { describe, expect, it } from 'vitest';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { expectData, expectError, rawRequest, taskBody } from './support/contract.js';
import { submitHelpers } from './support/http-submit-fixture.js';

const f = useGatewayFixture({ queues: ['initial', 'other'] });

const { counts, submit, submitRaw, rejected } = submitHelpers(() => f);

describe('body rules', () => {
  it('unknown fields are 400 and named', async () => {
    for (const field of ['extra', 'Priority', 'queueId', 'id', 'state', '__proto__', 'constructor']) {
      const raw = JSON.stringify(taskBody(f.t.queue_id)).replace(/}$/, `,${JSON.stringify(field)}:1}`);
      const before = await counts();
      await rejected(submitRaw(raw));
      expect(await counts()).toEqual(before);
    }
    await rejected(submit(taskBody(f.t.queue_id, { extra: 1 })), 'extra');
  });

  it('malformed JSON is 400', async () => {
    for (const raw of ['{', '{"queue_id":}', '{"a":1,}', "{'a':1}", 'nul', '{"a":1}{"b":2}', '\u0000', '{"a":"\u0001"}x', '{"queue_id":"a\\x"}']) {
      await rejected(submitRaw(raw));
    }
  });

  it('a body that is not a JSON object is 400', async () => {
    for (const raw of ['[]', '[{"queue_id":"x"}]', '"string"', '123', 'true', 'null', '']) await rejected(submitRaw(raw));
  });

  it('invalid UTF-8 bytes are 400', async () => {
    const json = JSON.stringify(taskBody(f.t.queue_id, { concurrency_key: 'XX' }));
    const at = Buffer.from(json).indexOf('XX');
    for (const bad of [
      [0xff, 0x41],
      [0xc0, 0xaf],
      [0xed, 0xa0],
      [0xe2, 0x82],
      [0x80, 0x41],
    ]) {
      const buf = Buffer.from(json);
      buf[at] = bad[0]!;
      buf[at + 1] = bad[1]!;
      await rejected(submitRaw(buf));
    }
    // Encoded surrogate (CESU-8 style) is not UTF-8 either.
    const cesu = Buffer.concat([
      Buffer.from(json.slice(0, json.indexOf('XX'))),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from(json.slice(json.indexOf('XX') + 2)),
    ]);
    await rejected(submitRaw(cesu));
  });

  it('a non-JSON Content-Type is 400; application/json with charset=utf-8 is fine', async () => {
    const raw = JSON.stringify(taskBody(f.t.queue_id));
    for (const ct of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/jsonx',
      'application/json; charset=latin1',
      'text/json',
    ]) {
      await rejected(submitRaw(raw, ikey(), { 'content-type': ct }), 'Content-Type');
    }
    for (const ct of [
      'application/json',
      'application/json; charset=utf-8',
      'application/json;charset=UTF-8',
      'Application/JSON',
      'application/json; charset="utf-8"',
    ]) {
      expectData(await submitRaw(raw, ikey(), { 'content-type': ct }), 201);
    }
  });

  it('query parameters on POST are 400 and store nothing', async () => {
    for (const qs of ['?a=1', '?queue_id=x', '?limit=1', '?x']) {
      const before = await counts();
      await rejected(call(f.gw.url, 'POST', `/v1/tasks${qs}`, { token: f.t.token, key: ikey(), body: taskBody(f.t.queue_id) }), 'query');
      expect(await counts()).toEqual(before);
    }
  });
});

describe('Idempotency-Key header', () => {
  it('missing → 400, nothing stored', async () => {
    const before = await counts();
    await rejected(call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, body: taskBody(f.t.queue_id) }), 'Idempotency-Key');
    expect(await counts()).toEqual(before);
  });

  it('1-255 visible ASCII is accepted; 256 chars, spaces, controls and non-ASCII are 400 with nothing stored', async () => {
    const base = 'k'.repeat(254);
    const before = await counts();
    await rejected(call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: base + 'xy', body: taskBody(f.t.queue_id) }), 'Idempotency-Key');
    for (const k of ['', 'a b', 'caf\u00e9']) {
      await rejected(call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: k, body: taskBody(f.t.queue_id) }), 'Idempotency-Key');
    }
    // Bytes fetch refuses to send: written on a raw socket.
    const u = new URL(f.gw.url);
    const body = Buffer.from(JSON.stringify(taskBody(f.t.queue_id)));
    for (const k of [Buffer.from('a\tb'), Buffer.from([0x61, 0x7f, 0x62]), Buffer.from([0x61, 0x80]), Buffer.from('caf\u00e9', 'utf8'), Buffer.from([0x01])]) {
      const head = Buffer.from(
        `POST /v1/tasks HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${f.t.token}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${body.length}\r\nConnection: close\r\nIdempotency-Key: `,
      );
      const r = await rawRequest(f.gw.url, Buffer.concat([head, k, Buffer.from('\r\n\r\n'), body]));
      expect(r.status).toBe(400);
      const parsed = JSON.parse(r.body);
      expect(r.headers['x-request-id']).toBe(parsed.request_id);
      expect(parsed.error.code).toBe('INVALID_ARGUMENT');
    }
    expect(await counts()).toEqual(before);
    // The same 255-character prefix works, as does every visible ASCII character.
    expectData(await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: base + 'x', body: taskBody(f.t.queue_id) }), 201);
    let visible = '';
    for (let c = 0x21; c <= 0x7e; c++) visible += String.fromCharCode(c);
    expectData(await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: visible, body: taskBody(f.t.queue_id) }), 201);
    expectData(await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: '!', body: taskBody(f.t.queue_id) }), 201);
  });

  it('the key of a request that failed validation is free to use afterwards', async () => {
    const key = ikey('reuse');
    await rejected(submit(taskBody(f.t.queue_id, { priority: 99 }), key), 'priority');
    await rejected(submit(taskBody('0'.repeat(32)), key), undefined, 404, 'NOT_FOUND');
    await rejected(submit(taskBody(f.t.queue_id, { not_before: new Date(Date.now() + 5 * 86400_000).toISOString() }), key), 'not_before');
    const [[r]] = (await f.db.pool.query('SELECT COUNT(*) AS n FROM receipts WHERE idempotency_key = ?', [key])) as any;
    expect(Number(r.n)).toBe(0);
    const task = expectData(await submit(taskBody(f.t.queue_id, { priority: 3 }), key), 201).task;
    expect(task.priority).toBe(3);
  });
});

describe('quota and retirement', () => {
  it('application quota of unfinished tasks → 429 QUOTA_EXCEEDED, nothing stored, key reusable', async () => {
    const q = await newTenant(f.db);
    expectData(await call(f.gw.url, 'POST', '/v1/tasks', { token: q.token, key: ikey(), body: taskBody(q.queue_id) }), 201);
    expectData(await call(f.gw.url, 'POST', '/v1/tasks', { token: q.token, key: ikey(), body: taskBody(q.queue_id) }), 201);
    await f.db.pool.query('UPDATE applications SET max_unfinished_tasks = 2 WHERE id = ?', [q.application_id]);
    const before = await counts();
    const key = ikey('quota');
    const err = expectError(await call(f.gw.url, 'POST', '/v1/tasks', { token: q.token, key, body: taskBody(q.queue_id) }), 429, 'QUOTA_EXCEEDED');
    expect(err.message.length).toBeGreaterThan(0);
    expect(await counts()).toEqual(before);
    const [[app]] = (await f.db.pool.query('SELECT unfinished_tasks FROM applications WHERE id = ?', [q.application_id])) as any;
    expect(Number(app.unfinished_tasks)).toBe(2);
    await f.db.pool.query('UPDATE applications SET max_unfinished_tasks = 3 WHERE id = ?', [q.application_id]);
    expectData(await call(f.gw.url, 'POST', '/v1/tasks', { token: q.token, key, body: taskBody(q.queue_id) }), 201);
    expectError(await call(f.gw.url, 'POST', '/v1/tasks', { token: q.token, key: ikey(), body: taskBody(q.queue_id) }), 429, 'QUOTA_EXCEEDED');
    // A replay is not new work: it still answers with the receipt while the quota is full.
    expectData(await call(f.gw.url, 'POST', '/v1/tasks', { token: q.token, key, body: taskBody(q.queue_id) }), 200);
  });

  it('concurrent submits never overshoot the quota; the counter matches the unfinished tasks', async () => {
    const q = await newTenant(f.db);
    await f.db.pool.query('UPDATE applications SET max_unfinished_tasks = 5 WHERE id = ?', [q.application_id]);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => call(f.gw.url, 'POST', '/v1/tasks', { token: q.token, key: ikey(), body: taskBody(q.queue_id) })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(5);
    for (const r of results.filter((r) => r.status !== 201)) expectError(r, 429, 'QUOTA_EXCEEDED');
    const [[row]] = (await f.db.pool.query(
      `SELECT a.unfinished_tasks AS counter, (SELECT COUNT(*) FROM tasks WHERE application_id = a.id AND state IN ('WAITING','LEASED','RUNNING','NEEDS_REVIEW')) AS actual
         FROM applications a WHERE a.id = ?`,
      [q.application_id],
    )) as any;
    expect(Number(row.counter)).toBe(5);
    expect(Number(row.actual)).toBe(5);
  });

  it('a retired queue → 409 RESOURCE_RETIRED, nothing stored; earlier receipts still replay', async () => {
    const q = expectData(await call(f.gw.url, 'POST', '/v1/queues', { token: f.t.token, key: ikey(), body: { name: 'to-retire' } }), 201).queue;
    const key = ikey();
    const first = expectData(await submit(taskBody(q.id), key), 201);
    await f.db.pool.query('UPDATE queues SET retired_at = UTC_TIMESTAMP(3), paused = 1 WHERE id = ?', [q.id]);
    const before = await counts();
    expectError(await submit(taskBody(q.id)), 409, 'RESOURCE_RETIRED');
    expect(await counts()).toEqual(before);
    const again = expectData(await submit(taskBody(q.id), key), 200);
    expect(again).toEqual({ ...first, deduplicated: true });
  });
});

describe('payload numbers', () => {
  it('refuses an integer beyond 2^53 (it would be stored changed) and keeps 2^53 - 1 exactly', async () => {
    const body = JSON.stringify(taskBody(f.t.queue_id, { payload: { id: 0 } }));
    await rejected(submitRaw(body.replace('"id":0', '"id":12345678901234567890')), 'payload.id');
    await rejected(submitRaw(body.replace('"id":0', '"id":[1,-9007199254740993]')), 'payload.id.1');
    const ok = await submitRaw(body.replace('"id":0', '"id":9007199254740991'));
    expect(ok.status).toBe(201);
    expect(ok.text).toContain('"id":9007199254740991');
  });
});
