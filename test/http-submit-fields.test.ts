// Contract: POST /v1/tasks field rules (task object, handler and versions, queue_id and payload,
// business_key, concurrency_key, priority/max_attempts/deadline_seconds, not_before). Every
// rejection changes nothing (no task, no receipt) and leaves the Idempotency-Key reusable.
// Body and header rules, quotas and retired queues: http-submit-body.test.ts.
import { describe, expect, it } from 'vitest';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { expectData, expectError, expectHexId, rawRequest, taskBody } from './support/contract.js';
import { submitHelpers } from './support/http-submit-fixture.js';

const f = useGatewayFixture({ queues: ['initial', 'other'] });

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const { counts, submit, submitRaw, rejected, rejectsBody, accepted } = submitHelpers(() => f);

describe('task object', () => {
  it('201 returns the full Task with documented fields and defaults', async () => {
    const r = await submit(taskBody(f.t.queue_id, { concurrency_key: 'object/42', business_key: 'order-7' }));
    const data = expectData(r, 201);
    expect(Object.keys(data).sort()).toEqual(['deduplicated', 'task']);
    expect(data.deduplicated).toBe(false);
    const task = data.task;
    expect(Object.keys(task).sort()).toEqual(
      [
        'id',
        'namespace_id',
        'queue_id',
        'handler',
        'handler_version',
        'payload_version',
        'payload',
        'business_key',
        'concurrency_key',
        'priority',
        'state',
        'attempts_made',
        'max_attempts',
        'not_before',
        'deadline_at',
        'created_at',
        'updated_at',
        'finished_at',
        'result',
      ].sort(),
    );
    expectHexId(task.id);
    expect(task.namespace_id).toBe(f.t.namespace_id);
    expect(task.queue_id).toBe(f.t.queue_id);
    expect(task.handler).toBe('object.update');
    expect(task.payload).toEqual({ operation_ref: 'update-001', object_ref: 'objects/42' });
    expect(task.business_key).toBe('order-7');
    expect(task.concurrency_key).toBe('object/42');
    expect(task.priority).toBe(0);
    expect(task.state).toBe('WAITING');
    expect(task.attempts_made).toBe(0);
    expect(task.max_attempts).toBe(3);
    expect(task.not_before).toBeNull();
    expect(task.finished_at).toBeNull();
    expect(task.result).toBeNull();
    for (const f of ['deadline_at', 'created_at', 'updated_at']) expect(task[f]).toMatch(ISO_MS);
    expect(Date.parse(task.deadline_at) - Date.parse(task.created_at)).toBe(86400 * 1000);
    const read = expectData(await call(f.gw.url, 'GET', `/v1/tasks/${task.id}`, { token: f.t.token }), 200);
    expect(read).toEqual({ task });
  });

  it('business_key and concurrency_key are omitted when absent', async () => {
    const task = await accepted(taskBody(f.t.queue_id));
    expect('business_key' in task).toBe(false);
    expect('concurrency_key' in task).toBe(false);
  });

  it('a paused queue accepts tasks (they wait)', async () => {
    const q = expectData(await call(f.gw.url, 'POST', '/v1/queues', { token: f.t.token, key: ikey(), body: { name: 'paused-accepts' } }), 201).queue;
    expectData(await call(f.gw.url, 'POST', `/v1/queues/${q.id}:pause`, { token: f.t.token, key: ikey(), body: { expected_revision: q.revision } }), 200);
    const task = await accepted(taskBody(q.id));
    expect(task.state).toBe('WAITING');
  });

  it('payload may be any JSON value', async () => {
    for (const payload of [null, 0, -1.5, 'text', true, [], [1, 'a', null], {}, { deep: { er: [{ x: 'é🚀' }] } }]) {
      const task = await accepted(taskBody(f.t.queue_id, { payload }));
      expect(task.payload).toEqual(payload);
    }
  });
});

describe('handler, handler_version, payload_version', () => {
  const limits = { handler: 128, handler_version: 64, payload_version: 64 } as const;
  for (const [field, max] of Object.entries(limits)) {
    it(`${field}: 1-${max} chars of [A-Za-z0-9._:-]`, async () => {
      const ok = ['a', 'A.z_0:9-', 'x'.repeat(max), 'v1.2.3', 'ns:handler-name_x'];
      for (const v of ok) expect((await accepted(taskBody(f.t.queue_id, { [field]: v })))[field]).toBe(v);
      const bad: unknown[] = ['', 'x'.repeat(max + 1), 'a b', 'a/b', 'é', 'a\n', '\na', ' a', 'a@b', 'a\u0000', 1, null, true, ['a'], { a: 1 }];
      for (const v of bad) await rejectsBody(taskBody(f.t.queue_id, { [field]: v }), field);
    });
    it(`${field} is required`, async () => {
      const body = taskBody(f.t.queue_id);
      delete body[field];
      await rejectsBody(body, field);
    });
  }
});

describe('queue_id and payload', () => {
  it('queue_id is required and must be a string', async () => {
    const body = taskBody(f.t.queue_id);
    delete body.queue_id;
    await rejectsBody(body, 'queue_id');
    for (const v of [1, null, true, [f.t.queue_id], { id: f.t.queue_id }]) await rejectsBody(taskBody(f.t.queue_id, { queue_id: v }), 'queue_id');
  });

  it('an unknown queue_id is 404 NOT_FOUND and stores nothing', async () => {
    for (const q of ['0'.repeat(32), 'nope', 'x'.repeat(64)]) await rejectsBody(taskBody(q), undefined, 404, 'NOT_FOUND');
  });

  it('payload is required', async () => {
    const body = taskBody(f.t.queue_id);
    delete body.payload;
    await rejectsBody(body, 'payload');
  });

  it('payload serialized exactly 256 KiB is accepted; one byte more is 413 PAYLOAD_TOO_LARGE', async () => {
    const limit = 256 * 1024;
    const exact = 'x'.repeat(limit - 2); // JSON string with its two quotes = 262144 bytes
    expect(Buffer.byteLength(JSON.stringify(exact))).toBe(limit);
    const task = await accepted(taskBody(f.t.queue_id, { payload: exact }));
    expect(task.payload).toBe(exact);
    await rejectsBody(taskBody(f.t.queue_id, { payload: exact + 'x' }), 'payload', 413, 'PAYLOAD_TOO_LARGE');
  });

  it('the payload limit counts UTF-8 bytes, not characters', async () => {
    const limit = 256 * 1024;
    const twoByte = 'é'.repeat((limit - 2) / 2);
    expect(Buffer.byteLength(JSON.stringify(twoByte))).toBe(limit);
    expect((await accepted(taskBody(f.t.queue_id, { payload: twoByte }))).payload).toBe(twoByte);
    await rejectsBody(taskBody(f.t.queue_id, { payload: twoByte.slice(1) + 'éx' }), 'payload', 413, 'PAYLOAD_TOO_LARGE');
  });

  it('an object payload of exactly 256 KiB serialized is accepted', async () => {
    const limit = 256 * 1024;
    const base = { a: '' };
    const pad = limit - Buffer.byteLength(JSON.stringify(base));
    const payload = { a: 'y'.repeat(pad) };
    expect(Buffer.byteLength(JSON.stringify(payload))).toBe(limit);
    expect((await accepted(taskBody(f.t.queue_id, { payload }))).payload).toEqual(payload);
    // Whitespace in the request does not count: the same payload pretty-printed is still accepted.
    const pretty = JSON.stringify(taskBody(f.t.queue_id, { payload }), null, 8);
    expectData(await submitRaw(pretty), 201);
  });

  it('a body over the server limit (1 MiB) is 413 PAYLOAD_TOO_LARGE in the envelope', async () => {
    const before = await counts();
    const big = JSON.stringify(taskBody(f.t.queue_id, { payload: 'z'.repeat(1024 * 1024 + 10) }));
    const r = await submitRaw(big);
    expectError(r, 413, 'PAYLOAD_TOO_LARGE');
    expect(await counts()).toEqual(before);
  });

  it('a chunked body over 1 MiB (no Content-Length) is 413 in the envelope', async () => {
    const body = Buffer.from(JSON.stringify(taskBody(f.t.queue_id, { payload: 'c'.repeat(1100 * 1024) })));
    const u = new URL(f.gw.url);
    const head =
      `POST /v1/tasks HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${f.t.token}\r\nIdempotency-Key: ${ikey()}\r\n` +
      `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`;
    const r = await rawRequest(
      f.gw.url,
      Buffer.concat([Buffer.from(head), Buffer.from(body.length.toString(16) + '\r\n'), body, Buffer.from('\r\n0\r\n\r\n')]),
    );
    expect(r.status).toBe(413);
    const parsed = JSON.parse(r.body);
    expect(parsed.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(r.headers['x-request-id']).toBe(parsed.request_id);
  });
});

describe('business_key', () => {
  it('1-191 code points; "" and other types are 400', async () => {
    expect((await accepted(taskBody(f.t.queue_id, { business_key: 'b' }))).business_key).toBe('b');
    const max = '🚀'.repeat(191);
    expect((await accepted(taskBody(f.t.queue_id, { business_key: max }))).business_key).toBe(max);
    for (const v of ['', '🚀'.repeat(192), 'b'.repeat(192), null, 5, ['x'], {}]) await rejectsBody(taskBody(f.t.queue_id, { business_key: v }), 'business_key');
  });

  it('a lone surrogate in business_key is 400', async () => {
    const raw = JSON.stringify(taskBody(f.t.queue_id)).replace(/}$/, ',"business_key":"a\\ud800"}');
    await rejected(submitRaw(raw), 'business_key');
  });

  it('has no dedupe meaning: two tasks may share one business_key', async () => {
    const a = await accepted(taskBody(f.t.queue_id, { business_key: 'shared-bk' }));
    const b = await accepted(taskBody(f.t.queue_id, { business_key: 'shared-bk' }));
    expect(a.id).not.toBe(b.id);
  });
});

describe('concurrency_key', () => {
  it('omitted or "" means no key; null is 400', async () => {
    expect('concurrency_key' in (await accepted(taskBody(f.t.queue_id)))).toBe(false);
    const empty = await accepted(taskBody(f.t.queue_id, { concurrency_key: '' }));
    expect('concurrency_key' in empty).toBe(false);
    const [[row]] = (await f.db.pool.query('SELECT concurrency_key FROM tasks WHERE id = ?', [empty.id])) as any;
    expect(row.concurrency_key).toBeNull();
    await rejectsBody(taskBody(f.t.queue_id, { concurrency_key: null }), 'concurrency_key');
    for (const v of [1, true, ['k'], { k: 1 }]) await rejectsBody(taskBody(f.t.queue_id, { concurrency_key: v }), 'concurrency_key');
  });

  it('191 code points are accepted (191 emoji = 382 UTF-16 units = 764 bytes); 192 are 400', async () => {
    const emoji = '😀'.repeat(191);
    expect(emoji.length).toBe(382);
    const task = await accepted(taskBody(f.t.queue_id, { concurrency_key: emoji }));
    expect(task.concurrency_key).toBe(emoji);
    const [[row]] = (await f.db.pool.query('SELECT LENGTH(concurrency_key) AS n FROM tasks WHERE id = ?', [task.id])) as any;
    expect(Number(row.n)).toBe(764);
    expect((await accepted(taskBody(f.t.queue_id, { concurrency_key: 'k'.repeat(191) }))).concurrency_key).toBe('k'.repeat(191));
    await rejectsBody(taskBody(f.t.queue_id, { concurrency_key: '😀'.repeat(192) }), 'concurrency_key');
    await rejectsBody(taskBody(f.t.queue_id, { concurrency_key: 'k'.repeat(192) }), 'concurrency_key');
    await rejectsBody(taskBody(f.t.queue_id, { concurrency_key: 'k'.repeat(190) + '😀😀' }), 'concurrency_key');
  });

  it('a lone surrogate ("\\ud800", "\\udc00") is 400', async () => {
    for (const esc of ['\\ud800', '\\udc00', 'a\\ud800b', 'x\\udfff', '\\ud83d']) {
      const raw = JSON.stringify(taskBody(f.t.queue_id)).replace(/}$/, `,"concurrency_key":"${esc}"}`);
      const before = await counts();
      await rejected(submitRaw(raw), 'concurrency_key');
      expect(await counts()).toEqual(before);
    }
    // An escaped surrogate pair is one valid code point.
    const raw = JSON.stringify(taskBody(f.t.queue_id)).replace(/}$/, ',"concurrency_key":"obj/\\ud83d\\ude00"}');
    expect(expectData(await submitRaw(raw), 201).task.concurrency_key).toBe('obj/😀');
  });

  it('control characters (category Cc) are 400 anywhere in the key', async () => {
    for (const c of ['\u0000', '\u0001', '\t', '\n', '\r', '\u001b', '\u001f', '\u007f', '\u0080', '\u0085', '\u009f']) {
      await rejectsBody(taskBody(f.t.queue_id, { concurrency_key: `obj${c}42` }), 'concurrency_key');
    }
  });

  it('leading or trailing Unicode White_Space is 400 (incl. U+00A0, U+3000, U+2028)', async () => {
    for (const ws of [' ', '\u00a0', '\u1680', '\u2000', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000']) {
      await rejectsBody(taskBody(f.t.queue_id, { concurrency_key: `${ws}obj` }), 'concurrency_key');
      await rejectsBody(taskBody(f.t.queue_id, { concurrency_key: `obj${ws}` }), 'concurrency_key');
    }
    await rejectsBody(taskBody(f.t.queue_id, { concurrency_key: ' ' }), 'concurrency_key');
    const r = expectError(await submit(taskBody(f.t.queue_id, { concurrency_key: 'obj ' })), 400, 'INVALID_ARGUMENT');
    expect(r.message).toMatch(/^concurrency_key: /);
  });

  it('inner spaces and non-White_Space format characters are kept as part of the key', async () => {
    for (const k of ['object 42', 'a\u00a0b', 'a\u3000b', 'a\u200bb', 'a\u200b', '\u200ba', 'Ωmega/ключ/鍵']) {
      expect((await accepted(taskBody(f.t.queue_id, { concurrency_key: k }))).concurrency_key).toBe(k);
    }
  });

  it('keys are exact bytes: case and composed/decomposed accents are distinct and filterable', async () => {
    const keys = ['object/A', 'object/a', 'caf\u00e9', 'cafe\u0301'];
    const ids: Record<string, string> = {};
    for (const k of keys) ids[k] = (await accepted(taskBody(f.t.queue_id, { concurrency_key: k }))).id;
    for (const k of keys) {
      const data = expectData(await call(f.gw.url, 'GET', `/v1/tasks?concurrency_key=${encodeURIComponent(k)}`, { token: f.t.token }), 200);
      expect(data.tasks.map((x: any) => x.id)).toEqual([ids[k]]);
      expect(data.tasks[0].concurrency_key).toBe(k);
    }
    const [rows] = (await f.db.pool.query('SELECT HEX(concurrency_key) AS h FROM tasks WHERE id IN (?, ?)', [ids['caf\u00e9'], ids['cafe\u0301']])) as any;
    expect(rows.map((r: any) => r.h).sort()).toEqual(['636166C3A9', '63616665CC81'].sort());
  });
});

describe('priority, max_attempts, deadline_seconds', () => {
  it('priority is an integer 0-9, default 0', async () => {
    for (const p of [0, 9, 5]) expect((await accepted(taskBody(f.t.queue_id, { priority: p }))).priority).toBe(p);
    for (const p of [-1, 10, 1.5, '1', null, true, 1e10]) await rejectsBody(taskBody(f.t.queue_id, { priority: p }), 'priority');
  });

  it("max_attempts is an integer 1-100 and defaults to the queue's retry.max_attempts", async () => {
    for (const m of [1, 100]) expect((await accepted(taskBody(f.t.queue_id, { max_attempts: m }))).max_attempts).toBe(m);
    for (const m of [0, 101, -1, 2.5, '3', null]) await rejectsBody(taskBody(f.t.queue_id, { max_attempts: m }), 'max_attempts');
    const q = expectData(
      await call(f.gw.url, 'POST', '/v1/queues', { token: f.t.token, key: ikey(), body: { name: 'seven-tries', retry: { max_attempts: 7 } } }),
      201,
    ).queue;
    expect((await accepted(taskBody(q.id))).max_attempts).toBe(7);
    expect((await accepted(taskBody(q.id, { max_attempts: 2 }))).max_attempts).toBe(2);
  });

  it('deadline_seconds is an integer 1-2592000 (default 86400) counted from acceptance', async () => {
    for (const d of [1, 2592000, 600]) {
      const task = await accepted(taskBody(f.t.queue_id, { deadline_seconds: d }));
      expect(Date.parse(task.deadline_at) - Date.parse(task.created_at)).toBe(d * 1000);
    }
    for (const d of [0, -5, 2592001, 1.5, '60', null]) await rejectsBody(taskBody(f.t.queue_id, { deadline_seconds: d }), 'deadline_seconds');
  });
});

describe('not_before', () => {
  it('accepts RFC 3339 timestamps and returns them as UTC with milliseconds', async () => {
    const soon = new Date(Date.now() + 3600_000);
    soon.setUTCMilliseconds(123);
    expect((await accepted(taskBody(f.t.queue_id, { not_before: soon.toISOString() }))).not_before).toBe(soon.toISOString());
    const offset = await accepted(taskBody(f.t.queue_id, { not_before: '2020-06-01T12:00:00+02:00' }));
    expect(offset.not_before).toBe('2020-06-01T10:00:00.000Z');
    const past = await accepted(taskBody(f.t.queue_id, { not_before: '2020-01-01T00:00:00Z' }));
    expect(past.not_before).toBe('2020-01-01T00:00:00.000Z');
    expect(past.state).toBe('WAITING');
  });

  it('rejects anything that is not an RFC 3339 timestamp', async () => {
    for (const v of [
      '',
      'tomorrow',
      '2026-01-01',
      '2026-01-01 00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-01-32T00:00:00Z',
      '2026-01-01T25:00:00Z',
      '2026-01-01T00:00:00',
      1767225600,
      null,
      {},
    ]) {
      await rejectsBody(taskBody(f.t.queue_id, { not_before: v }), 'not_before');
    }
  });

  it('impossible calendar dates are rejected, not rolled over', async () => {
    for (const v of ['2026-02-30T00:00:00Z', '2025-02-29T00:00:00Z', '2026-04-31T00:00:00Z', '2026-06-31T12:00:00+02:00', '2026-01-01T00:00:00+24:00']) {
      await rejectsBody(taskBody(f.t.queue_id, { not_before: v }), 'not_before');
    }
    expect((await accepted(taskBody(f.t.queue_id, { not_before: '2024-02-29T00:00:00Z' }))).not_before).toBe('2024-02-29T00:00:00.000Z');
  });

  it('far past timestamps are answered with 201 or 400, never 5xx', async () => {
    for (const v of [
      '0000-01-01T00:00:00Z',
      '0001-01-01T00:00:00Z',
      '0999-12-31T23:59:59.999Z',
      '1000-01-01T00:00:00Z',
      '1969-12-31T23:59:59.999Z',
      '1970-01-01T00:00:00Z',
    ]) {
      const r = await submit(taskBody(f.t.queue_id, { not_before: v }));
      if (r.status === 201) expect(Date.parse(r.body.data.task.not_before)).toBe(Date.parse(v));
      else expect(expectError(r, 400, 'INVALID_ARGUMENT').details?.field).toBe('not_before');
    }
  });

  it('must not be after the deadline', async () => {
    const twoDays = new Date(Date.now() + 2 * 86400_000).toISOString();
    await rejectsBody(taskBody(f.t.queue_id, { not_before: twoDays }), 'not_before');
    await rejectsBody(taskBody(f.t.queue_id, { not_before: new Date(Date.now() + 3600_000).toISOString(), deadline_seconds: 60 }), 'not_before');
    expect((await accepted(taskBody(f.t.queue_id, { not_before: twoDays, deadline_seconds: 3 * 86400 }))).not_before).toBe(twoDays);
  });
});
