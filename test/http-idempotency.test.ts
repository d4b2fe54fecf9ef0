// Contract: Idempotency-Key receipts on POST /v1/tasks: replay, normalization, conflicts,
// namespace scope, concurrency, durability across gateway restarts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { endOfFileChecks } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { expectData, expectError, limitedCredential, taskBody } from './support/contract.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { syncWaiting } from './support/waiting.js';
import { postTask } from './support/submit.js';

let db: TestDb;
let gw: GatewayProcess;
let gw2: GatewayProcess;
let t: CredentialsFile;
let u: CredentialsFile; // another application / namespace

beforeAll(async () => {
  db = await createTestDb();
  [gw, gw2] = await Promise.all([startGateway(db.dsn), startGateway(db.dsn)]);
  t = await newTenant(db, { queues: ['initial', 'other'] });
  u = await newTenant(db);
});
afterAll(async () => {
  await endOfFileChecks(db);
});

const submit = (body: unknown, key: string, opts: { token?: string; url?: string } = {}) => postTask(opts.url ?? gw.url, opts.token ?? t.token, body, key);
const submitRaw = (rawBody: string, key: string) => call(gw.url, 'POST', '/v1/tasks', { token: t.token, key, rawBody });

async function tasksWithKey(key: string, namespaceId = t.namespace_id): Promise<string[]> {
  const [rows] = (await db.pool.query(`SELECT t.id FROM tasks t JOIN receipts r ON r.resource_id = t.id WHERE r.namespace_id = ? AND r.idempotency_key = ?`, [
    namespaceId,
    key,
  ])) as any;
  return rows.map((r: any) => r.id);
}
async function taskCount(): Promise<number> {
  const [[r]] = (await db.pool.query('SELECT COUNT(*) AS n FROM tasks')) as any;
  return Number(r.n);
}

describe('replay', () => {
  it('same key + same content → 200 deduplicated:true with the original task', async () => {
    const key = ikey();
    const first = expectData(await submit(taskBody(t.queue_id, { concurrency_key: 'k/1', business_key: 'b1' }), key), 201);
    expect(first.deduplicated).toBe(false);
    for (let i = 0; i < 3; i++) {
      const again = expectData(await submit(taskBody(t.queue_id, { concurrency_key: 'k/1', business_key: 'b1' }), key), 200);
      expect(again).toEqual({ task: first.task, deduplicated: true });
    }
    expect(await tasksWithKey(key)).toEqual([first.task.id]);
  });

  it('a payload with quotes, backslashes and control characters: the reply, its frozen receipt and the replay are the same', async () => {
    // The receipt's frozen reply is written as a JsonText literal (db/sql-format.ts) and the reply
    // is that same text spliced into the envelope (http/envelope.ts sendData).
    const key = ikey();
    const payload = { s: `it's \\ \\' "q" \u0000\b\t\n\r\u001a ünï 𝄞 \u2028`, a: ["'", '\\', '"'] };
    const first = expectData(await submit(taskBody(t.queue_id, { payload }), key), 201);
    expect(first.task.payload).toEqual(payload);
    const again = expectData(await submit(taskBody(t.queue_id, { payload }), key), 200);
    expect(again).toEqual({ task: first.task, deduplicated: true });
    const [[row]] = (await db.pool.query('SELECT response_data FROM receipts WHERE namespace_id = ? AND idempotency_key = ?', [t.namespace_id, key])) as any;
    expect(JSON.parse(row.response_data)).toEqual(first);
  });

  it('the replayed receipt is frozen: the task changing later does not change the replay', async () => {
    const key = ikey();
    const first = expectData(await submit(taskBody(t.queue_id), key), 201).task;
    await db.pool.query(
      `UPDATE tasks SET state = 'CANCELLED', finished_at = UTC_TIMESTAMP(3), updated_at = UTC_TIMESTAMP(3), result_outcome = 'cancelled' WHERE id = ?`,
      [first.id],
    );
    await syncWaiting(db.pool);
    const now = expectData(await call(gw.url, 'GET', `/v1/tasks/${first.id}`, { token: t.token }), 200).task;
    expect(now.state).toBe('CANCELLED');
    const again = expectData(await submit(taskBody(t.queue_id), key), 200);
    expect(again.task).toEqual(first);
    expect(again.task.state).toBe('WAITING');
  });

  it('replays even after the queue was paused', async () => {
    const q = expectData(await call(gw.url, 'POST', '/v1/queues', { token: t.token, key: ikey(), body: { name: 'pause-then-replay' } }), 201).queue;
    const key = ikey();
    const first = expectData(await submit(taskBody(q.id), key), 201);
    expectData(await call(gw.url, 'POST', `/v1/queues/${q.id}:pause`, { token: t.token, key: ikey(), body: { expected_revision: q.revision } }), 200);
    expect(expectData(await submit(taskBody(q.id), key), 200)).toEqual({ ...first, deduplicated: true });
  });

  it('replays on another gateway node', async () => {
    const key = ikey();
    const first = expectData(await submit(taskBody(t.queue_id), key, { url: gw.url }), 201);
    expect(expectData(await submit(taskBody(t.queue_id), key, { url: gw2.url }), 200)).toEqual({ ...first, deduplicated: true });
  });

  it('another credential of the same namespace gets the same receipt (keys are per namespace)', async () => {
    const c = await limitedCredential(db, t.namespace_id, ['tasks:submit']);
    const key = ikey();
    const first = expectData(await submit(taskBody(t.queue_id), key), 201);
    expect(expectData(await submit(taskBody(t.queue_id), key, { token: c.token }), 200)).toEqual({ ...first, deduplicated: true });
  });
});

describe('normalization', () => {
  it('key order at every depth and whitespace do not matter', async () => {
    const key = ikey();
    const raw1 = `{"queue_id":"${t.queue_id}","handler":"h","handler_version":"v1","payload_version":"p1","payload":{"a":1,"b":{"x":[1,{"m":1,"n":2}],"y":"z"}}}`;
    const raw2 = `{
      "payload" : { "b" : { "y" : "z" , "x" : [ 1 , { "n" : 2 , "m" : 1 } ] } , "a" : 1 },
      "payload_version":"p1",   "handler_version" : "v1",
      "handler":"h", "queue_id" : "${t.queue_id}"
    }`;
    const first = expectData(await submitRaw(raw1, key), 201);
    expect(expectData(await submitRaw(raw2, key), 200)).toEqual({ ...first, deduplicated: true });
    expect(first.task.payload).toEqual({ a: 1, b: { x: [1, { m: 1, n: 2 }], y: 'z' } });
  });

  it('array order does matter', async () => {
    const key = ikey();
    expectData(await submit(taskBody(t.queue_id, { payload: [1, 2] }), key), 201);
    expectError(await submit(taskBody(t.queue_id, { payload: [2, 1] }), key), 409, 'IDEMPOTENCY_CONFLICT');
  });

  it('fields written with their defaults equal omitting them (priority 0, deadline_seconds 86400, concurrency_key "")', async () => {
    const explicit = { priority: 0, deadline_seconds: 86400, concurrency_key: '' };
    const k1 = ikey();
    const first = expectData(await submit(taskBody(t.queue_id), k1), 201);
    expect(expectData(await submit(taskBody(t.queue_id, explicit), k1), 200)).toEqual({ ...first, deduplicated: true });
    for (const [f, v] of Object.entries(explicit)) {
      expect(expectData(await submit(taskBody(t.queue_id, { [f]: v }), k1), 200).task.id).toBe(first.task.id);
    }
    // And the other way round.
    const k2 = ikey();
    const second = expectData(await submit(taskBody(t.queue_id, explicit), k2), 201);
    expect(expectData(await submit(taskBody(t.queue_id), k2), 200)).toEqual({ ...second, deduplicated: true });
  });

  it("max_attempts written as the queue's retry.max_attempts equals omitting it", async () => {
    const q = expectData(
      await call(gw.url, 'POST', '/v1/queues', { token: t.token, key: ikey(), body: { name: 'five-tries', retry: { max_attempts: 5 } } }),
      201,
    ).queue;
    const k1 = ikey();
    const first = expectData(await submit(taskBody(q.id), k1), 201);
    expect(first.task.max_attempts).toBe(5);
    expect(expectData(await submit(taskBody(q.id, { max_attempts: 5 }), k1), 200)).toEqual({ ...first, deduplicated: true });
    expectError(await submit(taskBody(q.id, { max_attempts: 3 }), k1), 409, 'IDEMPOTENCY_CONFLICT');
    const k2 = ikey();
    const second = expectData(await submit(taskBody(q.id, { max_attempts: 5 }), k2), 201);
    expect(expectData(await submit(taskBody(q.id), k2), 200)).toEqual({ ...second, deduplicated: true });
  });

  it('the same instant written differently in not_before is the same command', async () => {
    const key = ikey();
    const first = expectData(await submit(taskBody(t.queue_id, { not_before: '2020-06-01T12:00:00+02:00' }), key), 201);
    expect(expectData(await submit(taskBody(t.queue_id, { not_before: '2020-06-01T10:00:00.000Z' }), key), 200).task).toEqual(first.task);
  });
});

describe('conflicts', () => {
  it('same key with different content or target → 409 IDEMPOTENCY_CONFLICT, nothing changes', async () => {
    const key = ikey();
    const base = taskBody(t.queue_id, { concurrency_key: 'c/1', business_key: 'b' });
    const first = expectData(await submit(base, key), 201);
    const before = await taskCount();
    const variants: Record<string, unknown>[] = [
      { ...base, payload: { operation_ref: 'update-002', object_ref: 'objects/42' } },
      { ...base, payload: { operation_ref: 'update-001' } },
      { ...base, handler: 'other.handler' },
      { ...base, handler_version: 'v2' },
      { ...base, payload_version: 'v2' },
      { ...base, queue_id: t.queues.other },
      { ...base, concurrency_key: 'c/2' },
      { ...base, concurrency_key: 'C/1' },
      { ...base, business_key: 'b2' },
      { ...base, priority: 1 },
      { ...base, max_attempts: 5 },
      { ...base, deadline_seconds: 86401 },
      { ...base, not_before: '2020-01-01T00:00:00Z' },
    ];
    for (const v of variants) {
      const err = expectError(await submit(v, key), 409, 'IDEMPOTENCY_CONFLICT');
      expect(err.message.length).toBeGreaterThan(0);
    }
    const { business_key: _drop, ...withoutBk } = base;
    expectError(await submit(withoutBk, key), 409, 'IDEMPOTENCY_CONFLICT');
    expect(await taskCount()).toBe(before);
    // The receipt is intact.
    expect(expectData(await submit(base, key), 200)).toEqual({ ...first, deduplicated: true });
  });

  it('the same key on another operation → 409 and the queue is not created', async () => {
    const key = ikey();
    expectData(await submit(taskBody(t.queue_id), key), 201);
    expectError(await call(gw.url, 'POST', '/v1/queues', { token: t.token, key, body: { name: 'conflicting-op' } }), 409, 'IDEMPOTENCY_CONFLICT');
    expectError(
      await call(gw.url, 'POST', `/v1/queues/${t.queue_id}:pause`, { token: t.token, key, body: { expected_revision: '1' } }),
      409,
      'IDEMPOTENCY_CONFLICT',
    );
    const [rows] = (await db.pool.query('SELECT id FROM queues WHERE name = ?', ['conflicting-op'])) as any;
    expect(rows).toEqual([]);
    const [[q]] = (await db.pool.query('SELECT paused FROM queues WHERE id = ?', [t.queue_id])) as any;
    expect(Number(q.paused)).toBe(0);
  });
});

describe('key identity', () => {
  it('keys are case-sensitive: ABC and abc are different commands', async () => {
    const base = ikey('case');
    const upper = expectData(await submit(taskBody(t.queue_id), base + '-ABC'), 201).task;
    const lower = expectData(await submit(taskBody(t.queue_id, { payload: 'other' }), base + '-abc'), 201).task;
    expect(upper.id).not.toBe(lower.id);
  });
});

describe('namespace scope', () => {
  it('two namespaces use the same key independently', async () => {
    const key = ikey('shared');
    const a = expectData(await submit(taskBody(t.queue_id), key), 201).task;
    const b = expectData(await submit(taskBody(u.queue_id, { payload: 'different' }), key, { token: u.token }), 201).task;
    expect(a.id).not.toBe(b.id);
    expect(b.namespace_id).toBe(u.namespace_id);
    expect(expectData(await submit(taskBody(t.queue_id), key), 200).task).toEqual(a);
    expect(expectData(await submit(taskBody(u.queue_id, { payload: 'different' }), key, { token: u.token }), 200).task).toEqual(b);
    expect(await tasksWithKey(key, t.namespace_id)).toEqual([a.id]);
    expect(await tasksWithKey(key, u.namespace_id)).toEqual([b.id]);
  });
});

describe('concurrency', () => {
  it('50 concurrent identical submits → exactly one task; one 201, 49 × 200, one task id', async () => {
    const key = ikey('burst');
    const body = taskBody(t.queue_id, { concurrency_key: 'burst/1', payload: { n: 50 } });
    const before = await taskCount();
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => submit(body, key, { url: i % 2 ? gw2.url : gw.url })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(49);
    const ids = new Set(results.map((r) => r.body.data.task.id));
    expect(ids.size).toBe(1);
    for (const r of results) expect(r.body.data.deduplicated).toBe(r.status === 200);
    const [[row]] = (await db.pool.query(`SELECT COUNT(*) AS n FROM tasks WHERE namespace_id = ? AND concurrency_key = ?`, [
      t.namespace_id,
      Buffer.from('burst/1'),
    ])) as any;
    expect(Number(row.n)).toBe(1);
    expect(await taskCount()).toBe(before + 1);
    const [[rc]] = (await db.pool.query('SELECT COUNT(*) AS n, MIN(http_status) AS s FROM receipts WHERE idempotency_key = ?', [key])) as any;
    expect(Number(rc.n)).toBe(1);
    expect(Number(rc.s)).toBe(201);
  });

  it('concurrent submits of one key with two contents: one wins, same-content twins replay, the rest conflict', async () => {
    const key = ikey('race');
    const x = taskBody(t.queue_id, { payload: 'x' });
    const y = taskBody(t.queue_id, { payload: 'y' });
    const before = await taskCount();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => submit(i % 2 ? x : y, key, { url: i % 4 < 2 ? gw.url : gw2.url })));
    const winners = results.filter((r) => r.status === 201);
    expect(winners).toHaveLength(1);
    const winPayload = winners[0]!.body.data.task.payload;
    results.forEach((r, i) => {
      const mine = i % 2 ? 'x' : 'y';
      if (mine === winPayload) expect([200, 201]).toContain(r.status);
      else expectError(r, 409, 'IDEMPOTENCY_CONFLICT');
    });
    expect(await taskCount()).toBe(before + 1);
  });

  it('concurrent identical submits that all fail inside the transaction (quota) all get 429, no receipt', async () => {
    const q = await newTenant(db);
    await db.pool.query('UPDATE applications SET max_unfinished_tasks = 0 WHERE id = ?', [q.application_id]);
    const key = ikey('quota-burst');
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => submit(taskBody(q.queue_id), key, { token: q.token, url: i % 2 ? gw.url : gw2.url })),
    );
    for (const r of results) expectError(r, 429, 'QUOTA_EXCEEDED');
    const [[rc]] = (await db.pool.query('SELECT COUNT(*) AS n FROM receipts WHERE namespace_id = ?', [q.namespace_id])) as any;
    expect(Number(rc.n)).toBe(0);
    await db.pool.query('UPDATE applications SET max_unfinished_tasks = 10 WHERE id = ?', [q.application_id]);
    expectData(await submit(taskBody(q.queue_id), key, { token: q.token }), 201);
  });

  it('concurrent identical submits to a missing queue all get 404', async () => {
    const key = ikey('missing-burst');
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => submit(taskBody('a'.repeat(32)), key, { url: i % 2 ? gw.url : gw2.url })));
    for (const r of results) expectError(r, 404, 'NOT_FOUND');
  });

  it('concurrent submits with different keys all succeed with distinct tasks', async () => {
    const results = await Promise.all(Array.from({ length: 30 }, () => submit(taskBody(t.queue_id), ikey('many'))));
    for (const r of results) expectData(r, 201);
    expect(new Set(results.map((r) => r.body.data.task.id)).size).toBe(30);
  });
});

describe('durability', () => {
  it('receipts survive a gateway restart', async () => {
    const key = ikey('restart');
    const own = await startGateway(db.dsn);
    const first = expectData(await submit(taskBody(t.queue_id, { concurrency_key: 'restart/1' }), key, { url: own.url }), 201);
    expect(await own.stop()).toBe(0);
    const fresh = await startGateway(db.dsn);
    expect(expectData(await submit(taskBody(t.queue_id, { concurrency_key: 'restart/1' }), key, { url: fresh.url }), 200)).toEqual({
      ...first,
      deduplicated: true,
    });
    expectError(await submit(taskBody(t.queue_id, { concurrency_key: 'restart/2' }), key, { url: fresh.url }), 409, 'IDEMPOTENCY_CONFLICT');
    await fresh.stop();
  });

  it('a receipt is stored in the same transaction as the task (every task has exactly one receipt)', async () => {
    const [rows] = (await db.pool.query(
      `SELECT t.id, COUNT(r.idempotency_key) AS n FROM tasks t LEFT JOIN receipts r ON r.resource_id = t.id GROUP BY t.id HAVING n <> 1`,
    )) as any;
    expect(rows).toEqual([]);
    const [pending] = (await db.pool.query('SELECT idempotency_key FROM receipts WHERE http_status = 0')) as any;
    expect(pending).toEqual([]);
  });
});
