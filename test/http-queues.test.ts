// Contract: POST /v1/queues, GET /v1/queues[/{id}], POST /v1/queues/{id}:pause|:resume.
import { describe, expect, it } from 'vitest';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { expectData, expectError, expectHexId, limitedCredential } from './support/contract.js';

const f = useGatewayFixture();

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const create = (body: unknown, key = ikey(), token = f.t.token) => call(f.gw.url, 'POST', '/v1/queues', { token, key, body });
const pause = (id: string, body: unknown, key = ikey()) => call(f.gw.url, 'POST', `/v1/queues/${id}:pause`, { token: f.t.token, key, body });
const resume = (id: string, body: unknown, key = ikey()) => call(f.gw.url, 'POST', `/v1/queues/${id}:resume`, { token: f.t.token, key, body });
const getQ = async (id: string) => expectData(await call(f.gw.url, 'GET', `/v1/queues/${id}`, { token: f.t.token }), 200).queue;

async function queueCount(): Promise<number> {
  const [[r]] = (await f.db.pool.query('SELECT COUNT(*) AS n FROM queues')) as any;
  return Number(r.n);
}
let n = 0;
const uniq = (p = 'q') => `${p}-${++n}`;

describe('POST /v1/queues', () => {
  it('creates with defaults: 201 {queue, deduplicated:false}', async () => {
    const data = expectData(await create({ name: 'defaults' }), 201);
    expect(Object.keys(data).sort()).toEqual(['deduplicated', 'queue']);
    expect(data.deduplicated).toBe(false);
    const q = data.queue;
    expect(Object.keys(q).sort()).toEqual(
      [
        'id',
        'namespace_id',
        'name',
        'revision',
        'paused',
        'max_active_attempts',
        'lease_seconds',
        'retry',
        'active_attempts',
        'created_at',
        'updated_at',
      ].sort(),
    );
    expectHexId(q.id);
    expect(q).toMatchObject({
      namespace_id: f.t.namespace_id,
      name: 'defaults',
      revision: '1',
      paused: false,
      max_active_attempts: 1000,
      lease_seconds: 30,
      retry: { max_attempts: 3, initial_backoff_ms: 1000, max_backoff_ms: 60000, multiplier: 2 },
      active_attempts: 0,
    });
    expect(q.created_at).toMatch(ISO_MS);
    expect(q.updated_at).toMatch(ISO_MS);
    expect(await getQ(q.id)).toEqual(q);
  });

  it('creates with a full body', async () => {
    const body = {
      name: 'full.body_1-x',
      max_active_attempts: 7,
      lease_seconds: 3600,
      retry: { max_attempts: 100, initial_backoff_ms: 0, max_backoff_ms: 5, multiplier: 1.5 },
    };
    const q = expectData(await create(body), 201).queue;
    expect(q).toMatchObject({ ...body, revision: '1', paused: false });
    expect(await getQ(q.id)).toEqual(q);
  });

  it('a partial retry policy is completed with the defaults', async () => {
    const q = expectData(await create({ name: uniq(), retry: { max_attempts: 9 } }), 201).queue;
    expect(q.retry).toEqual({ max_attempts: 9, initial_backoff_ms: 1000, max_backoff_ms: 60000, multiplier: 2 });
  });

  it('name: 1-64 of [a-z0-9._-]', async () => {
    for (const name of ['a', '0', 'a.b_c-d', 'x'.repeat(64), '...', '-']) expect(expectData(await create({ name }), 201).queue.name).toBe(name);
    const before = await queueCount();
    for (const name of ['', 'x'.repeat(65), 'Upper', 'a b', 'a/b', 'a:b', 'é', ' a', 'a\n', 5, null, ['a']]) {
      expect(expectError(await create({ name }), 400, 'INVALID_ARGUMENT').details?.field).toBe('name');
    }
    expect(expectError(await create({}), 400, 'INVALID_ARGUMENT').details?.field).toBe('name');
    expect(await queueCount()).toBe(before);
  });

  it('lease_seconds 5-3600; max_active_attempts ≥ 1; retry bounds', async () => {
    for (const lease_seconds of [5, 3600]) expect(expectData(await create({ name: uniq(), lease_seconds }), 201).queue.lease_seconds).toBe(lease_seconds);
    const before = await queueCount();
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ lease_seconds: 4 }, 'lease_seconds'],
      [{ lease_seconds: 3601 }, 'lease_seconds'],
      [{ lease_seconds: 30.5 }, 'lease_seconds'],
      [{ lease_seconds: '30' }, 'lease_seconds'],
      [{ lease_seconds: null }, 'lease_seconds'],
      [{ max_active_attempts: 0 }, 'max_active_attempts'],
      [{ max_active_attempts: -1 }, 'max_active_attempts'],
      [{ max_active_attempts: 'many' }, 'max_active_attempts'],
      [{ retry: { max_attempts: 0 } }, 'retry.max_attempts'],
      [{ retry: { max_attempts: 101 } }, 'retry.max_attempts'],
      [{ retry: { multiplier: 0.5 } }, 'retry.multiplier'],
      [{ retry: { initial_backoff_ms: -1 } }, 'retry.initial_backoff_ms'],
      [{ retry: { initial_backoff_ms: 5000, max_backoff_ms: 10 } }, 'retry.initial_backoff_ms'],
      [{ retry: { jitter: true } }, 'retry.jitter'],
      [{ retry: null }, 'retry'],
      [{ retry: [] }, 'retry'],
      [{ paused: true }, 'paused'],
      [{ revision: '1' }, 'revision'],
    ];
    for (const [over, field] of bad) {
      expect(expectError(await create({ name: uniq(), ...over }), 400, 'INVALID_ARGUMENT').details?.field).toBe(field);
    }
    expect(await queueCount()).toBe(before);
  });

  it('a duplicate name → 409 STATE_CONFLICT, nothing created, key reusable', async () => {
    const name = uniq('dup');
    const first = expectData(await create({ name }), 201).queue;
    const before = await queueCount();
    const key = ikey();
    expectError(await create({ name }, key), 409, 'STATE_CONFLICT');
    expectError(await create({ name, lease_seconds: 60 }), 409, 'STATE_CONFLICT');
    expect(await queueCount()).toBe(before);
    expect(expectData(await create({ name: uniq('dup') }, key), 201).queue.id).not.toBe(first.id);
  });

  it('concurrent creates of one name with different keys: exactly one 201, the rest 409 STATE_CONFLICT', async () => {
    const name = uniq('race-name');
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => create({ name, lease_seconds: 10 + i })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of results.filter((r) => r.status !== 201)) expectError(r, 409, 'STATE_CONFLICT');
    const [rows] = (await f.db.pool.query('SELECT id FROM queues WHERE namespace_id = ? AND name = ?', [f.t.namespace_id, name])) as any;
    expect(rows).toHaveLength(1);
  });

  it("a retired queue's name is never reused", async () => {
    const name = uniq('retired');
    const q = expectData(await create({ name }), 201).queue;
    await f.db.pool.query('UPDATE queues SET retired_at = UTC_TIMESTAMP(3), paused = 1 WHERE id = ?', [q.id]);
    expectError(await create({ name }), 409, 'STATE_CONFLICT');
  });

  it('the same name in another namespace is fine', async () => {
    const other = await newTenant(f.db);
    expectData(await create({ name: 'defaults' }, ikey(), other.token), 201);
  });

  it('replay → 200 with the frozen queue; defaults written out are the same command', async () => {
    const key = ikey();
    const name = uniq('replay');
    const first = expectData(await create({ name }, key), 201);
    expectData(await pause(first.queue.id, { expected_revision: '1' }), 200);
    const same = [
      { name },
      { name, lease_seconds: 30 },
      { name, max_active_attempts: 1000, lease_seconds: 30, retry: { max_attempts: 3, initial_backoff_ms: 1000, max_backoff_ms: 60000, multiplier: 2 } },
      { retry: { multiplier: 2 }, name },
    ];
    for (const body of same) expect(expectData(await create(body, key), 200)).toEqual({ ...first, deduplicated: true });
    expectError(await create({ name, lease_seconds: 31 }, key), 409, 'IDEMPOTENCY_CONFLICT');
    expectError(await create({ name: name + 'x' }, key), 409, 'IDEMPOTENCY_CONFLICT');
  });

  it('requires Idempotency-Key and takes no query parameters', async () => {
    const before = await queueCount();
    expectError(await call(f.gw.url, 'POST', '/v1/queues', { token: f.t.token, body: { name: uniq() } }), 400, 'INVALID_ARGUMENT');
    expectError(await call(f.gw.url, 'POST', '/v1/queues?name=x', { token: f.t.token, key: ikey(), body: { name: uniq() } }), 400, 'INVALID_ARGUMENT');
    expectError(await call(f.gw.url, 'POST', '/v1/queues', { token: f.t.token, key: ikey(), rawBody: '{"name":' }), 400, 'INVALID_ARGUMENT');
    expectError(await call(f.gw.url, 'POST', '/v1/queues', { token: f.t.token, key: ikey(), rawBody: '["q"]' }), 400, 'INVALID_ARGUMENT');
    expect(await queueCount()).toBe(before);
  });
});

describe('GET /v1/queues', () => {
  it("lists the namespace's queues (retired ones included) and nothing else", async () => {
    const other = await newTenant(f.db, { queues: ['zzz-other'] });
    const queues = expectData(await call(f.gw.url, 'GET', '/v1/queues', { token: f.t.token }), 200).queues;
    const [rows] = (await f.db.pool.query('SELECT id FROM queues WHERE namespace_id = ?', [f.t.namespace_id])) as any;
    expect(queues.map((q: any) => q.id).sort()).toEqual(rows.map((r: any) => r.id).sort());
    expect(queues.map((q: any) => q.id)).not.toContain(other.queue_id);
    const retired = queues.filter((q: any) => q.retired_at);
    expect(retired.length).toBeGreaterThan(0);
    for (const q of retired) expect(q.retired_at).toMatch(ISO_MS);
    for (const q of queues.filter((q: any) => !q.retired_at)) expect('retired_at' in q).toBe(false);
  });

  it('a limited credential only sees its queues', async () => {
    const a = expectData(await create({ name: uniq('lim') }), 201).queue;
    const b = expectData(await create({ name: uniq('lim') }), 201).queue;
    const c = await limitedCredential(f.db, f.t.namespace_id, ['queues:manage'], [a.id, b.id]);
    const queues = expectData(await call(f.gw.url, 'GET', '/v1/queues', { token: c.token }), 200).queues;
    expect(queues.map((q: any) => q.id).sort()).toEqual([a.id, b.id].sort());
  });

  it('GET /v1/queues/{id}: 404 for absent, malformed or foreign ids', async () => {
    const other = await newTenant(f.db);
    for (const id of ['0'.repeat(32), 'nope', other.queue_id, f.t.queue_id.toUpperCase()]) {
      expectError(await call(f.gw.url, 'GET', `/v1/queues/${id}`, { token: f.t.token }), 404, 'NOT_FOUND');
    }
  });

  it('GET /v1/queues takes no query parameters', async () => {
    expectError(await call(f.gw.url, 'GET', '/v1/queues?name=x', { token: f.t.token }), 400, 'INVALID_ARGUMENT');
  });
});

describe('pause and resume', () => {
  it('pause and resume bump the revision and flip paused', async () => {
    const q = expectData(await create({ name: uniq('pr') }), 201).queue;
    const p = expectData(await pause(q.id, { expected_revision: '1' }), 200);
    expect(Object.keys(p).sort()).toEqual(['deduplicated', 'queue']);
    expect(p.deduplicated).toBe(false);
    expect(p.queue).toMatchObject({ id: q.id, revision: '2', paused: true });
    expect(await getQ(q.id)).toEqual(p.queue);
    const r = expectData(await resume(q.id, { expected_revision: '2' }), 200);
    expect(r.queue).toMatchObject({ id: q.id, revision: '3', paused: false });
    expect(Date.parse(r.queue.updated_at)).toBeGreaterThanOrEqual(Date.parse(q.updated_at));
    expect(r.queue.created_at).toBe(q.created_at);
    expect(await getQ(q.id)).toEqual(r.queue);
  });

  it('expected_revision must be a decimal string', async () => {
    const q = expectData(await create({ name: uniq('rev') }), 201).queue;
    for (const body of [
      {},
      { expected_revision: 1 },
      { expected_revision: null },
      { expected_revision: '' },
      { expected_revision: '01' },
      { expected_revision: 'one' },
      { expected_revision: '-1' },
      { expected_revision: '1.0' },
      { expected_revision: ' 1' },
      { expected_revision: '1', extra: true },
    ]) {
      expectError(await pause(q.id, body), 400, 'INVALID_ARGUMENT');
      expectError(await resume(q.id, body), 400, 'INVALID_ARGUMENT');
    }
    expectError(
      await call(f.gw.url, 'POST', `/v1/queues/${q.id}:pause`, { token: f.t.token, key: ikey(), rawBody: '{"expected_revision":1}' }),
      400,
      'INVALID_ARGUMENT',
    );
    expect(await getQ(q.id)).toEqual(q);
  });

  it('a stale or future revision → 409 STATE_CONFLICT, nothing changes, key reusable', async () => {
    const q = expectData(await create({ name: uniq('stale') }), 201).queue;
    expectData(await pause(q.id, { expected_revision: '1' }), 200);
    const key = ikey();
    for (const rev of ['1', '3', '999', '18446744073709551615', '99999999999999999999']) {
      expectError(await resume(q.id, { expected_revision: rev }, key), 409, 'STATE_CONFLICT');
    }
    expectError(await pause(q.id, { expected_revision: '1' }), 409, 'STATE_CONFLICT');
    expect(await getQ(q.id)).toMatchObject({ revision: '2', paused: true });
    expect(expectData(await resume(q.id, { expected_revision: '2' }, key), 200).queue).toMatchObject({ revision: '3', paused: false });
  });

  it('concurrent pauses with one expected_revision: exactly one wins', async () => {
    const q = expectData(await create({ name: uniq('race') }), 201).queue;
    const results = await Promise.all(Array.from({ length: 10 }, () => pause(q.id, { expected_revision: '1' })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of results.filter((r) => r.status !== 200)) expectError(r, 409, 'STATE_CONFLICT');
    expect(await getQ(q.id)).toMatchObject({ revision: '2', paused: true });
  });

  it('replay of a pause after a resume returns the frozen receipt and does not pause again', async () => {
    const q = expectData(await create({ name: uniq('frozen') }), 201).queue;
    const key = ikey();
    const p = expectData(await pause(q.id, { expected_revision: '1' }, key), 200);
    const r = expectData(await resume(q.id, { expected_revision: '2' }), 200);
    const again = expectData(await pause(q.id, { expected_revision: '1' }, key), 200);
    expect(again).toEqual({ ...p, deduplicated: true });
    expect(again.queue).toMatchObject({ revision: '2', paused: true });
    expect(await getQ(q.id)).toEqual(r.queue);
  });

  it('a pause key reused for resume, another queue or another revision → 409 IDEMPOTENCY_CONFLICT', async () => {
    const q = expectData(await create({ name: uniq('keyed') }), 201).queue;
    const q2 = expectData(await create({ name: uniq('keyed') }), 201).queue;
    const key = ikey();
    expectData(await pause(q.id, { expected_revision: '1' }, key), 200);
    expectError(await resume(q.id, { expected_revision: '2' }, key), 409, 'IDEMPOTENCY_CONFLICT');
    expectError(await pause(q2.id, { expected_revision: '1' }, key), 409, 'IDEMPOTENCY_CONFLICT');
    expectError(await pause(q.id, { expected_revision: '2' }, key), 409, 'IDEMPOTENCY_CONFLICT');
    expect(await getQ(q.id)).toMatchObject({ revision: '2', paused: true });
    expect(await getQ(q2.id)).toMatchObject({ revision: '1', paused: false });
  });

  it('a retired queue cannot be paused or resumed (409) but its pause receipt still replays', async () => {
    const q = expectData(await create({ name: uniq('gone') }), 201).queue;
    const key = ikey();
    const p = expectData(await pause(q.id, { expected_revision: '1' }, key), 200);
    await f.db.pool.query('UPDATE queues SET retired_at = UTC_TIMESTAMP(3), revision = revision + 1 WHERE id = ?', [q.id]);
    expectError(await resume(q.id, { expected_revision: '3' }), 409, 'STATE_CONFLICT');
    expectError(await pause(q.id, { expected_revision: '3' }), 409, 'STATE_CONFLICT');
    expect(expectData(await pause(q.id, { expected_revision: '1' }, key), 200)).toEqual({ ...p, deduplicated: true });
    const now = await getQ(q.id);
    expect(now.retired_at).toMatch(ISO_MS);
    expect(now.revision).toBe('3');
  });

  it('pause requires Idempotency-Key and takes no query parameters', async () => {
    const q = expectData(await create({ name: uniq('hdr') }), 201).queue;
    expectError(await call(f.gw.url, 'POST', `/v1/queues/${q.id}:pause`, { token: f.t.token, body: { expected_revision: '1' } }), 400, 'INVALID_ARGUMENT');
    expectError(
      await call(f.gw.url, 'POST', `/v1/queues/${q.id}:pause?force=1`, { token: f.t.token, key: ikey(), body: { expected_revision: '1' } }),
      400,
      'INVALID_ARGUMENT',
    );
    expectError(
      await call(f.gw.url, 'POST', `/v1/queues/${q.id}:pause`, { token: f.t.token, key: 'bad key', body: { expected_revision: '1' } }),
      400,
      'INVALID_ARGUMENT',
    );
    expect(await getQ(q.id)).toEqual(q);
  });

  it('unknown verbs on a queue are 404; a known verb with the wrong method is 405', async () => {
    expectError(
      await call(f.gw.url, 'POST', `/v1/queues/${f.t.queue_id}:delete`, { token: f.t.token, key: ikey(), body: { expected_revision: '1' } }),
      404,
      'NOT_FOUND',
    );
    expectError(await call(f.gw.url, 'GET', `/v1/queues/${f.t.queue_id}:pause`, { token: f.t.token }), 405, 'METHOD_NOT_ALLOWED');
  });
});
