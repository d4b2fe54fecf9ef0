// POST /v1/tasks:batch (docs/http-api.md): each item is its own command with its own receipt, results in
// item order, durable before the reply; per-item refusals in their slots; envelope errors for the
// whole request; races against the quota edge and a queue retirement.
import { describe, expect, it } from 'vitest';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { hello, openRaw } from './support/raw-worker.js';
import { newTenant } from './support/db.js';
import { createClient } from '../worker-sdk/http-client.js';
import { createQueue } from './support/dispatch-fixture.js';

const f = useGatewayFixture({ gatewayEnv: { ORBIT_MAX_BATCH_BODY_BYTES: String(400 * 1024) } });

const item = (queueId: string, over: Record<string, unknown> = {}) => ({
  queue_id: queueId,
  handler: 'h',
  handler_version: 'v1',
  payload_version: 'v1',
  payload: { n: 1 },
  idempotency_key: ikey('item'),
  ...over,
});
const batch = (tasks: unknown, token = f.t.token, headers: Record<string, string> = {}) =>
  call(f.gw.url, 'POST', '/v1/tasks:batch', { token, body: { tasks }, headers });

describe('POST /v1/tasks:batch', () => {
  it('accepts every item as its own command, in item order, and they are durable and dispatched', async () => {
    const items = Array.from({ length: 120 }, (_, i) => item(f.t.queue_id, { payload: { i } }));
    const r = await batch(items);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.results).toHaveLength(120);
    r.body.data.results.forEach((s: any, i: number) => {
      expect(s.status).toBe(201);
      expect(s.data.deduplicated).toBe(false);
      expect(s.data.task.payload).toEqual({ i });
      expect(s.data.task.state).toBe('WAITING');
    });
    const ids = r.body.data.results.map((s: any) => s.data.task.id);
    const [rows] = await f.db.pool.query('SELECT COUNT(*) AS n FROM tasks WHERE id IN (?)', [ids]);
    expect(Number((rows as any)[0].n)).toBe(120);
    // a worker gets them (the commit woke the dispatcher)
    const w = await openRaw(f.gw.url, f.t.token);
    w.send(hello([f.t.queue_id], { capacity: 8 }));
    await w.next('hello.ok');
    const a = await w.next('task.assign');
    expect(ids).toContain(a.task.id);
    w.close();
    await w.closed;
  });

  it('replays: a batch item and a single submit with the same key and content are one command, either way', async () => {
    const it1 = item(f.t.queue_id);
    const { idempotency_key: k1, ...body1 } = it1;
    const single = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: k1, body: body1 });
    expect(single.status).toBe(201);
    const it2 = item(f.t.queue_id);
    const r = await batch([it1, it2, { ...it1, payload: { other: true } }]);
    expect(r.body.data.results.map((s: any) => s.status)).toEqual([200, 201, 409]);
    expect(r.body.data.results[0].data).toEqual({ ...single.body.data, deduplicated: true });
    expect(r.body.data.results[2].error.code).toBe('IDEMPOTENCY_CONFLICT');
    const { idempotency_key: k2, ...body2 } = it2;
    const again = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: k2, body: body2 });
    expect(again.status).toBe(200);
    expect(again.body.data.task.id).toBe(r.body.data.results[1].data.task.id);
  });

  it('two items with the same key behave as two concurrent submits: one task', async () => {
    const it1 = item(f.t.queue_id);
    const r = await batch([it1, it1, { ...it1, priority: 5 }]);
    const res = r.body.data.results;
    // Which of the two identical items executes first is not specified; the other replays it.
    expect(
      res
        .slice(0, 2)
        .map((s: any) => s.status)
        .sort(),
    ).toEqual([200, 201]);
    expect(res[2].status).toBe(409);
    expect(res[1].data.task.id).toBe(res[0].data.task.id);
    const [rows] = await f.db.pool.query('SELECT COUNT(*) AS n FROM receipts WHERE idempotency_key = ?', [it1.idempotency_key]);
    expect(Number((rows as any)[0].n)).toBe(1);
  });

  it('per-item refusals in their slots, the other items accepted', async () => {
    const other = await newTenant(f.db);
    const big = 'x'.repeat(256 * 1024 + 10);
    const r = await batch([
      item(f.t.queue_id),
      'not an object',
      item(f.t.queue_id, { handler: 'bad handler!' }),
      item(f.t.queue_id, { payload: big }),
      item(f.t.queue_id, { extra: 1 }),
      item(f.t.queue_id, { idempotency_key: '' }),
      item('é'),
      item(other.queue_id),
      item(f.t.queue_id, { concurrency_key: ' lead' }),
      item(f.t.queue_id, { concurrency_key: 'object/1' }),
    ]);
    expect(r.status, r.text).toBe(200);
    const res = r.body.data.results;
    expect(res.map((s: any) => s.status)).toEqual([201, 400, 400, 413, 400, 400, 404, 404, 400, 201]);
    expect(res[1].error.code).toBe('INVALID_ARGUMENT');
    expect(res[3].error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(res[6].error.code).toBe('NOT_FOUND');
    expect(res[9].data.task.concurrency_key).toBe('object/1');
  });

  it('a retired queue and a queue outside queue_ids are refused per item', async () => {
    const q = await createQueue(f, { name: 'batch-retired', lease_seconds: 30 });
    const ret = await call(f.gw.url, 'POST', `/v1/queues/${q.id}:retire`, { token: f.t.token, key: ikey(), body: { expected_revision: '1', reason: 'x' } });
    expect(ret.status, ret.text).toBe(200);
    const r = await batch([item(q.id), item(f.t.queue_id)]);
    expect(r.body.data.results.map((s: any) => s.status)).toEqual([409, 201]);
    expect(r.body.data.results[0].error.code).toBe('RESOURCE_RETIRED');
  });

  it.each([
    ['not an object', 400, '[1]'],
    ['no tasks', 400, '{}'],
    ['0 items', 400, '{"tasks":[]}'],
    ['501 items', 400, JSON.stringify({ tasks: Array.from({ length: 501 }, () => ({})) })],
    ['an unknown envelope field', 400, '{"tasks":[{}],"atomic":true}'],
    ['invalid JSON', 400, '{"tasks":'],
    ['a body over ORBIT_MAX_BATCH_BODY_BYTES', 413, JSON.stringify({ tasks: [{ pad: 'p'.repeat(410 * 1024) }] })],
  ])('%s → one %i for the whole request, nothing stored', async (_n, status, raw) => {
    const [before] = await f.db.pool.query('SELECT COUNT(*) AS n FROM tasks');
    const r = await call(f.gw.url, 'POST', '/v1/tasks:batch', { token: f.t.token, rawBody: raw });
    expect(r.status, r.text).toBe(status);
    expect(r.body.error.code).toBe(status === 413 ? 'PAYLOAD_TOO_LARGE' : 'INVALID_ARGUMENT');
    const [after] = await f.db.pool.query('SELECT COUNT(*) AS n FROM tasks');
    expect((after as any)[0].n).toBe((before as any)[0].n);
  });

  it('an Idempotency-Key header is refused (the batch as a whole is not deduplicated); scope checked', async () => {
    const r = await batch([item(f.t.queue_id)], f.t.token, { 'idempotency-key': 'whole-batch' });
    expect(r.status).toBe(400);
    expect(r.body.error.details.field).toBe('Idempotency-Key');
    const [rows] = await f.db.pool.query(
      "INSERT INTO credentials (id, namespace_id, name, token_hash, scopes, queue_ids, created_at) VALUES (?, ?, 'ro', UNHEX(SHA2('ro-token-batch', 256)), 'tasks:read', NULL, UTC_TIMESTAMP(3))",
      ['ab'.repeat(16), f.t.namespace_id],
    );
    void rows;
    const ro = await batch([item(f.t.queue_id)], 'ro-token-batch');
    expect(ro.status).toBe(403);
  });

  it('concurrent batches at the quota edge: never one task over, the rest 429 in their slots', async () => {
    const t = await newTenant(f.db);
    await f.db.pool.query('UPDATE applications SET max_unfinished_tasks = 250 WHERE id = ?', [t.application_id]);
    const rs = await Promise.all(
      Array.from({ length: 6 }, () =>
        batch(
          Array.from({ length: 60 }, () => item(t.queue_id)),
          t.token,
        ),
      ),
    );
    const slots = rs.flatMap((r) => r.body.data.results);
    const accepted = slots.filter((s: any) => s.status === 201).length;
    expect(accepted).toBe(250);
    expect(slots.filter((s: any) => s.status === 429 && s.error.code === 'QUOTA_EXCEEDED')).toHaveLength(360 - 250);
    const [[app]] = (await f.db.pool.query('SELECT unfinished_tasks FROM applications WHERE id = ?', [t.application_id])) as any;
    const [[n]] = (await f.db.pool.query('SELECT COUNT(*) AS n FROM tasks WHERE application_id = ?', [t.application_id])) as any;
    expect(Number(app.unfinished_tasks)).toBe(250);
    expect(Number(n.n)).toBe(250);
  });

  it('batches racing a queue retirement: never both', async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < 5; round++) {
      const q = await createQueue(f, { name: `batch-race-${round}`, lease_seconds: 30 });
      const delay = [0, 2, 5, 10, 200][round]!;
      const batches = Array.from({ length: 4 }, (_, i) =>
        new Promise((r) => setTimeout(r, delay + i * 3)).then(() => batch(Array.from({ length: 25 }, () => item(q.id)))),
      );
      const retire = call(f.gw.url, 'POST', `/v1/queues/${q.id}:retire`, { token: f.t.token, key: ikey(), body: { expected_revision: '1', reason: 'race' } });
      const [rr, ...bs] = await Promise.all([retire, ...batches]);
      const slots = bs.flatMap((b) => b.body.data.results);
      const accepted = slots.filter((s: any) => s.status === 201).length;
      const [[all]] = (await f.db.pool.query('SELECT COUNT(*) AS n FROM tasks WHERE queue_id = ?', [q.id])) as any;
      expect(Number(all.n)).toBe(accepted);
      if (rr.status === 200) {
        expect(accepted).toBe(0);
        outcomes.push('retired');
      } else {
        expect(rr.body.error.code).toBe('RESOURCE_BUSY');
        expect(accepted).toBeGreaterThan(0);
        outcomes.push('busy');
      }
      expect(slots.every((s: any) => s.status === 201 || s.error?.code === 'RESOURCE_RETIRED')).toBe(true);
    }
    expect(outcomes).toContain('retired');
  });

  it('the SDK client: submitTasks returns one result per item', async () => {
    const client = createClient({ url: f.gw.url, token: f.t.token });
    const items = [item(f.t.queue_id), item(f.t.queue_id, { handler: '!' })];
    const res = await client.submitTasks(items as any);
    expect(res.map((s) => s.status)).toEqual([201, 400]);
    const first = res[0]!;
    if (!('data' in first)) throw new Error('expected data');
    expect((await client.getTask(first.data.task.id)).id).toBe(first.data.task.id);
  });
});
