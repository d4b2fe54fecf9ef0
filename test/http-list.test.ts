// Contract: GET /v1/tasks (filters, limit, cursor pagination, stable newest-first order, summaries)
// and GET /v1/tasks/{id}.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { endOfFileChecks } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { expectData, expectError, taskBody } from './support/contract.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { syncWaiting } from './support/waiting.js';

let db: TestDb;
let gw: GatewayProcess;
let t: CredentialsFile; // small fixture for filters
let big: CredentialsFile; // 250 tasks for pagination
const made: any[] = []; // tasks of t in creation order

beforeAll(async () => {
  db = await createTestDb();
  gw = await startGateway(db.dsn);
  t = await newTenant(db, { queues: ['alpha', 'beta'] });
  big = await newTenant(db);
  const specs: Record<string, unknown>[] = [
    { queue: 'alpha', concurrency_key: 'obj/1', business_key: 'order-1' },
    { queue: 'alpha', concurrency_key: 'obj/2', business_key: 'order-1' },
    { queue: 'beta', concurrency_key: 'obj/1', business_key: 'Order-1' },
    { queue: 'beta' },
    { queue: 'alpha', concurrency_key: 'obj/1' },
    { queue: 'beta', business_key: 'order-2' },
  ];
  for (const s of specs) {
    const { queue, ...over } = s;
    made.push(expectData(await call(gw.url, 'POST', '/v1/tasks', { token: t.token, key: ikey(), body: taskBody(t.queues[queue as string]!, over) }), 201).task);
  }
  // Move two tasks to other states (as dispatch would).
  await db.pool.query(
    `UPDATE tasks SET state = 'SUCCEEDED', finished_at = UTC_TIMESTAMP(3), result_outcome = 'succeeded', result_output = '{"big":"output"}' WHERE id = ?`,
    [made[0].id],
  );
  await db.pool.query(
    `UPDATE tasks SET state = 'NEEDS_REVIEW', result_outcome = 'unknown', result_error_code = 'LEASE_EXPIRED', result_error_message = 'worker vanished' WHERE id = ?`,
    [made[4].id],
  );
  await syncWaiting(db.pool);
  // 250 tasks for the pagination tests, submitted in parallel batches.
  for (let b = 0; b < 10; b++) {
    await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        call(gw.url, 'POST', '/v1/tasks', { token: big.token, key: ikey('big'), body: taskBody(big.queue_id, { payload: { n: b * 25 + i } }) }).then((r) =>
          expectData(r, 201),
        ),
      ),
    );
  }
});
afterAll(async () => {
  await endOfFileChecks(db);
});

const list = (qs: string, token = t.token) => call(gw.url, 'GET', `/v1/tasks${qs}`, { token });
const ids = (data: any): string[] => data.tasks.map((x: any) => x.id);
const newestFirst = (xs: any[]) => [...xs].reverse().map((x) => x.id);

describe('GET /v1/tasks/{id}', () => {
  it('returns the full task including payload and result.output', async () => {
    const task = expectData(await call(gw.url, 'GET', `/v1/tasks/${made[0].id}`, { token: t.token }), 200).task;
    expect(task.payload).toEqual(made[0].payload);
    expect(task.state).toBe('SUCCEEDED');
    expect(task.result).toEqual({ outcome: 'succeeded', output: { big: 'output' } });
    const review = expectData(await call(gw.url, 'GET', `/v1/tasks/${made[4].id}`, { token: t.token }), 200).task;
    expect(review.result).toEqual({ outcome: 'unknown', error: { code: 'LEASE_EXPIRED', message: 'worker vanished' } });
  });
});

describe('GET /v1/tasks filters', () => {
  it('no filter: every task of the namespace, newest first, summaries without payload', async () => {
    const data = expectData(await list(''), 200);
    expect(Object.keys(data).sort()).toEqual(['next_cursor', 'tasks']);
    expect(ids(data)).toEqual(newestFirst(made));
    expect(data.next_cursor).toBeNull();
    for (const s of data.tasks) {
      expect('payload' in s).toBe(false);
      expect(s.namespace_id).toBe(t.namespace_id);
    }
  });

  it('a summary is the task without payload and result.output', async () => {
    const data = expectData(await list(''), 200);
    for (const s of data.tasks) {
      const full = expectData(await call(gw.url, 'GET', `/v1/tasks/${s.id}`, { token: t.token }), 200).task;
      const { payload: _p, ...rest } = full;
      if (rest.result) {
        const { output: _o, ...r } = rest.result;
        rest.result = r;
      }
      expect(s).toEqual(rest);
    }
    const done = data.tasks.find((x: any) => x.id === made[0].id);
    expect(done.result).toEqual({ outcome: 'succeeded' });
  });

  it('queue_id', async () => {
    expect(ids(expectData(await list(`?queue_id=${t.queues.alpha}`), 200))).toEqual(newestFirst(made.filter((m) => m.queue_id === t.queues.alpha)));
    expect(ids(expectData(await list(`?queue_id=${t.queues.beta}`), 200))).toEqual(newestFirst(made.filter((m) => m.queue_id === t.queues.beta)));
  });

  it('state', async () => {
    expect(ids(expectData(await list('?state=SUCCEEDED'), 200))).toEqual([made[0].id]);
    expect(ids(expectData(await list('?state=NEEDS_REVIEW'), 200))).toEqual([made[4].id]);
    expect(ids(expectData(await list('?state=WAITING'), 200))).toEqual(newestFirst([made[1], made[2], made[3], made[5]]));
    for (const s of ['LEASED', 'RUNNING', 'FAILED', 'CANCELLED', 'DEADLINE_EXCEEDED']) expect(expectData(await list(`?state=${s}`), 200).tasks).toEqual([]);
    for (const s of ['waiting', 'DONE', '', 'WAITING,LEASED']) expectError(await list(`?state=${encodeURIComponent(s)}`), 400, 'INVALID_ARGUMENT');
  });

  it('concurrency_key (exact match)', async () => {
    expect(ids(expectData(await list('?concurrency_key=obj%2F1'), 200))).toEqual(newestFirst([made[0], made[2], made[4]]));
    expect(ids(expectData(await list('?concurrency_key=obj/2'), 200))).toEqual([made[1].id]);
    expect(expectData(await list('?concurrency_key=OBJ%2F1'), 200).tasks).toEqual([]);
    expect(expectData(await list('?concurrency_key=obj'), 200).tasks).toEqual([]);
    for (const bad of ['%20obj%2F1', 'obj%2F1%C2%A0', 'a%00b']) expectError(await list(`?concurrency_key=${bad}`), 400, 'INVALID_ARGUMENT');
  });

  it('business_key (exact, case-sensitive)', async () => {
    expect(ids(expectData(await list('?business_key=order-1'), 200))).toEqual(newestFirst([made[0], made[1]]));
    expect(ids(expectData(await list('?business_key=Order-1'), 200))).toEqual([made[2].id]);
    expect(expectData(await list('?business_key=order'), 200).tasks).toEqual([]);
  });

  it('business_key matching is exact about trailing spaces', async () => {
    const plain = expectData(
      await call(gw.url, 'POST', '/v1/tasks', { token: t.token, key: ikey(), body: taskBody(t.queues.alpha!, { business_key: 'pad-x' }) }),
      201,
    ).task;
    const padded = expectData(
      await call(gw.url, 'POST', '/v1/tasks', { token: t.token, key: ikey(), body: taskBody(t.queues.alpha!, { business_key: 'pad-x ' }) }),
      201,
    ).task;
    expect(padded.business_key).toBe('pad-x ');
    expect(ids(expectData(await list('?business_key=pad-x'), 200))).toEqual([plain.id]);
    expect(ids(expectData(await list('?business_key=pad-x%20'), 200))).toEqual([padded.id]);
    expect(ids(expectData(await list('?business_key=pad-x%20%20'), 200))).toEqual([]);
    await db.pool.query('DELETE FROM tasks WHERE id IN (?, ?)', [plain.id, padded.id]);
    await db.pool.query('DELETE FROM waiting_tasks WHERE task_id IN (?, ?)', [plain.id, padded.id]);
  });

  it('filters combine', async () => {
    expect(ids(expectData(await list(`?queue_id=${t.queues.alpha}&concurrency_key=obj%2F1&state=WAITING`), 200))).toEqual([]);
    expect(ids(expectData(await list(`?queue_id=${t.queues.alpha}&concurrency_key=obj%2F1`), 200))).toEqual(newestFirst([made[0], made[4]]));
    expect(ids(expectData(await list(`?queue_id=${t.queues.beta}&business_key=order-2&state=WAITING`), 200))).toEqual([made[5].id]);
  });

  it('unknown or repeated query parameters are 400', async () => {
    for (const qs of ['?foo=1', '?queue=x', '?Limit=5', '?state=WAITING&state=LEASED', '?limit=1&limit=2', '?payload=1']) {
      expectError(await list(qs), 400, 'INVALID_ARGUMENT');
    }
  });

  it('an unknown or foreign queue_id filter is 404', async () => {
    expectError(await list(`?queue_id=${big.queue_id}`), 404, 'NOT_FOUND');
    expectError(await list(`?queue_id=${'0'.repeat(32)}`), 404, 'NOT_FOUND');
    expectError(await list('?queue_id=nope'), 404, 'NOT_FOUND');
  });
});

describe('limit', () => {
  it('1-500, default 100', async () => {
    const one = expectData(await list('?limit=1'), 200);
    expect(ids(one)).toEqual([made[5].id]);
    expect(typeof one.next_cursor).toBe('string');
    expect(expectData(await list('?limit=500'), 200).tasks).toHaveLength(made.length);
    expect(expectData(await list('', big.token), 200).tasks).toHaveLength(100);
    expect(expectData(await list('?limit=500', big.token), 200).tasks).toHaveLength(250);
  });

  it('0, 501, non-integers and garbage are 400', async () => {
    for (const l of ['0', '501', 'x', '-1', '1.5', '', '1e2', '%205', '5%20', '+5', '0x10', '99999999999999999999', '%EF%BC%95']) {
      expectError(await list(`?limit=${l}`), 400, 'INVALID_ARGUMENT');
    }
  });
});

describe('cursor pagination', () => {
  it('walks 250 tasks with limit 100: 100 + 100 + 50, each exactly once, newest first', async () => {
    const all = ids(expectData(await list('?limit=500', big.token), 200));
    expect(new Set(all).size).toBe(250);
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    do {
      const data: any = expectData(await list(`?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, big.token), 200);
      sizes.push(data.tasks.length);
      seen.push(...ids(data));
      cursor = data.next_cursor;
    } while (cursor);
    expect(sizes).toEqual([100, 100, 50]);
    expect(seen).toEqual(all);
    expect(new Set(seen).size).toBe(250);
  });

  it('the order is stable and matches acceptance order (newest first)', async () => {
    // Acceptance order is the insertion order (seq). created_at is read from the database clock
    // inside each command's transaction, so two commands committed in one coalesced batch (or
    // two concurrent batches) may carry timestamps a millisecond out of seq order.
    const [rows] = (await db.pool.query('SELECT id FROM tasks WHERE namespace_id = ? ORDER BY seq DESC', [big.namespace_id])) as any;
    const all = ids(expectData(await list('?limit=500', big.token), 200));
    expect(all).toEqual(rows.map((r: any) => r.id));
    expect(ids(expectData(await list('?limit=500', big.token), 200))).toEqual(all);
  });

  it('tasks submitted during a walk do not shift later pages', async () => {
    const all = ids(expectData(await list('?limit=500', big.token), 200));
    const p1 = expectData(await list('?limit=100', big.token), 200);
    for (let i = 0; i < 5; i++) expectData(await call(gw.url, 'POST', '/v1/tasks', { token: big.token, key: ikey(), body: taskBody(big.queue_id) }), 201);
    const p2 = expectData(await list(`?limit=100&cursor=${p1.next_cursor}`, big.token), 200);
    const p3 = expectData(await list(`?limit=100&cursor=${p2.next_cursor}`, big.token), 200);
    expect([...ids(p1), ...ids(p2), ...ids(p3)]).toEqual(all);
    expect(p3.next_cursor).toBeNull();
  });

  it('an exact multiple of the limit ends with next_cursor null or an empty last page', async () => {
    const walk: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const data: any = expectData(await list(`?limit=3${cursor ? `&cursor=${cursor}` : ''}`), 200);
      walk.push(...ids(data));
      cursor = data.next_cursor;
      pages++;
    } while (cursor && pages < 10);
    expect(walk).toEqual(newestFirst(made));
    expect(pages).toBeLessThanOrEqual(3);
  });

  it('the cursor combines with filters', async () => {
    const p1 = expectData(await list('?concurrency_key=obj%2F1&limit=2'), 200);
    expect(ids(p1)).toEqual(newestFirst([made[0], made[2], made[4]]).slice(0, 2));
    const p2 = expectData(await list(`?concurrency_key=obj%2F1&limit=2&cursor=${p1.next_cursor}`), 200);
    expect(ids(p2)).toEqual([made[0].id]);
    expect(p2.next_cursor).toBeNull();
  });

  it('a malformed cursor is 400', async () => {
    const forged = (s: string) => Buffer.from(s).toString('base64url');
    for (const c of ['abc', '!!!', '', '%00', forged('s0'), forged('x5'), forged('s-1'), forged('s1 '), forged('s' + '9'.repeat(30)), forged('{"seq":5}')]) {
      expectError(await list(`?cursor=${encodeURIComponent(c)}`), 400, 'INVALID_ARGUMENT');
    }
  });
});
