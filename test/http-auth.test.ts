// Contract: envelope on every response, authentication (401) and authorization (403 scope / queue,
// 404 across namespaces), health endpoints and unknown routes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { endOfFileChecks } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { expectData, expectError, limitedCredential, taskBody } from './support/contract.js';
import { revokeCredential } from '../server/db/credentials.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';

let db: TestDb;
let gw: GatewayProcess;
let a: CredentialsFile; // tenant A, queues q1 and q2
let b: CredentialsFile; // tenant B (another application and namespace)
let taskA1: any; // a task of A in q1
let taskA2: any; // a task of A in q2
let taskB: any;

beforeAll(async () => {
  db = await createTestDb();
  gw = await startGateway(db.dsn);
  a = await newTenant(db, { queues: ['q1', 'q2'] });
  b = await newTenant(db, { queues: ['q1'] });
  taskA1 = expectData(await call(gw.url, 'POST', '/v1/tasks', { token: a.token, key: ikey(), body: taskBody(a.queues.q1!) }), 201).task;
  taskA2 = expectData(await call(gw.url, 'POST', '/v1/tasks', { token: a.token, key: ikey(), body: taskBody(a.queues.q2!) }), 201).task;
  taskB = expectData(await call(gw.url, 'POST', '/v1/tasks', { token: b.token, key: ikey(), body: taskBody(b.queue_id) }), 201).task;
});
afterAll(async () => {
  await endOfFileChecks(db);
});

async function countTasks(): Promise<number> {
  const [rows] = (await db.pool.query('SELECT COUNT(*) AS n FROM tasks')) as any;
  return Number(rows[0].n);
}
async function countReceipts(): Promise<number> {
  const [rows] = (await db.pool.query('SELECT COUNT(*) AS n FROM receipts')) as any;
  return Number(rows[0].n);
}

describe('envelope', () => {
  it('success carries request_id in body and X-Request-Id header, unique per request', async () => {
    const r1 = await call(gw.url, 'GET', `/v1/tasks/${taskA1.id}`, { token: a.token });
    const r2 = await call(gw.url, 'GET', `/v1/tasks/${taskA1.id}`, { token: a.token });
    expectData(r1, 200);
    expectData(r2, 200);
    expect(r1.body.request_id).not.toBe(r2.body.request_id);
    expect(r1.headers.get('content-type')).toBe('application/json; charset=utf-8');
  });

  it('unknown routes answer 404 NOT_FOUND in the envelope', async () => {
    for (const [m, p] of [
      ['GET', '/'],
      ['GET', '/v1'],
      ['GET', '/v1/nothing'],
      ['GET', '/v1/tasks/'],
      ['POST', '/v1/tasks/abc/def'],
    ] as const) {
      expectError(await call(gw.url, m, p, { token: a.token }), 404, 'NOT_FOUND');
    }
    // A path that exists under another method is 405 with Allow (test/http-hints.test.ts).
    for (const [m, p] of [
      ['DELETE', '/v1/tasks'],
      ['PUT', `/v1/queues/${a.queue_id}`],
      ['POST', '/healthz'],
    ] as const) {
      expectError(await call(gw.url, m, p, { token: a.token }), 405, 'METHOD_NOT_ALLOWED');
    }
  });

  it('unknown routes are 404 even without a credential', async () => {
    expectError(await call(gw.url, 'GET', '/v2/tasks'), 404, 'NOT_FOUND');
  });

  it('a malformed percent-encoding in a path parameter is a 4xx envelope, not a 500', async () => {
    const r = await call(gw.url, 'GET', '/v1/tasks/%E0%A4%A', { token: a.token });
    expect([400, 404]).toContain(r.status);
    expectError(r, r.status, r.status === 400 ? 'INVALID_ARGUMENT' : 'NOT_FOUND');
  });

  it('/healthz, /readyz need no credential; /metrics is Prometheus text with orbit_tasks_accepted_total', async () => {
    expect(expectData(await call(gw.url, 'GET', '/healthz'), 200).status).toBe('ok');
    const ready = expectData(await call(gw.url, 'GET', '/readyz'), 200);
    expect(ready.status).toBe('ready');
    const m = await call(gw.url, 'GET', '/metrics');
    expect(m.status).toBe(200);
    expect(m.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(m.headers.get('x-request-id')).toMatch(/^[0-9a-f]{32}$/);
    expect(m.text).toMatch(/^# HELP orbit_tasks_accepted_total /m);
    expect(m.text).toMatch(/^# TYPE orbit_tasks_accepted_total counter$/m);
    const v = /^orbit_tasks_accepted_total(?:\{[^}]*\})? (\d+)$/m.exec(m.text);
    expect(v).not.toBeNull();
    expect(Number(v![1])).toBeGreaterThanOrEqual(3);
  });

  it('the accepted counter grows with a new submit, not with a replay', async () => {
    const read = async () => Number(/^orbit_tasks_accepted_total(?:\{[^}]*\})? (\d+)$/m.exec((await call(gw.url, 'GET', '/metrics')).text)![1]);
    const before = await read();
    const key = ikey();
    expectData(await call(gw.url, 'POST', '/v1/tasks', { token: a.token, key, body: taskBody(a.queue_id) }), 201);
    expectData(await call(gw.url, 'POST', '/v1/tasks', { token: a.token, key, body: taskBody(a.queue_id) }), 200);
    expect(await read()).toBe(before + 1);
  });
});

describe('authentication', () => {
  const routes = (): Array<[string, string, unknown?]> => [
    ['GET', '/v1/tasks'],
    ['GET', `/v1/tasks/${taskA1.id}`],
    ['POST', '/v1/tasks', taskBody(a.queue_id)],
    ['GET', '/v1/queues'],
    ['GET', `/v1/queues/${a.queue_id}`],
    ['POST', '/v1/queues', { name: 'never-created' }],
    ['POST', `/v1/queues/${a.queue_id}:pause`, { expected_revision: '1' }],
    ['POST', `/v1/queues/${a.queue_id}:resume`, { expected_revision: '1' }],
  ];

  it('missing Authorization header → 401 on every authenticated route', async () => {
    for (const [m, p, body] of routes()) {
      expectError(await call(gw.url, m, p, { key: ikey(), body }), 401, 'UNAUTHENTICATED');
    }
  });

  it('malformed Authorization headers → 401', async () => {
    const bad = [
      a.token, // no scheme
      `Basic ${a.token}`,
      `Bearer`,
      `Bearer `,
      `Bearer  ${a.token}`,
      `Bearer ${a.token} extra`,
      `Token ${a.token}`,
      `Bearer ${'x'.repeat(600)}`,
      `Bearer short`,
      `Bearer ${a.token}\u00e9`,
    ];
    for (const h of bad) {
      const r = await call(gw.url, 'GET', '/v1/tasks', { headers: { authorization: h } });
      expectError(r, 401, 'UNAUTHENTICATED');
    }
  });

  it('the Bearer scheme name is case-insensitive; the token is not', async () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
      expectData(await call(gw.url, 'GET', `/v1/tasks/${taskA1.id}`, { headers: { authorization: `${scheme} ${a.token}` } }), 200);
    }
    const flipped = a.token.slice(0, 4) + a.token.slice(4).replace(/[a-z]/, (c) => c.toUpperCase());
    if (flipped !== a.token) expectError(await call(gw.url, 'GET', '/v1/tasks', { token: flipped }), 401, 'UNAUTHENTICATED');
  });

  it('unknown token → 401 and nothing is stored', async () => {
    const tasks = await countTasks();
    const receipts = await countReceipts();
    expectError(await call(gw.url, 'POST', '/v1/tasks', { token: 'orb_' + 'A'.repeat(43), key: ikey(), body: taskBody(a.queue_id) }), 401, 'UNAUTHENTICATED');
    expectError(
      await call(gw.url, 'GET', `/v1/tasks/${taskA1.id}`, { token: a.token.slice(0, -1) + (a.token.endsWith('A') ? 'B' : 'A') }),
      401,
      'UNAUTHENTICATED',
    );
    expect(await countTasks()).toBe(tasks);
    expect(await countReceipts()).toBe(receipts);
  });

  it('401 is checked before the body: garbage body with no token is still 401', async () => {
    expectError(await call(gw.url, 'POST', '/v1/tasks', { rawBody: '{{{{', key: ikey() }), 401, 'UNAUTHENTICATED');
  });

  it('a revoked token → 401 immediately, on every route', async () => {
    const c = await limitedCredential(db, a.namespace_id, ['tasks:submit', 'tasks:read', 'queues:manage']);
    expectData(await call(gw.url, 'GET', `/v1/tasks/${taskA1.id}`, { token: c.token }), 200);
    expect(await revokeCredential(db.pool, c.id)).toBe(true);
    for (const [m, p, body] of routes()) {
      expectError(await call(gw.url, m, p, { token: c.token, key: ikey(), body }), 401, 'UNAUTHENTICATED');
    }
  });

  it('a revoked token the node has cached (it submitted before) → 401 first on POST /v1/tasks, whatever else is wrong', async () => {
    const c = await limitedCredential(db, a.namespace_id, ['tasks:submit']);
    expectData(await call(gw.url, 'POST', '/v1/tasks', { token: c.token, key: ikey(), body: taskBody(a.queue_id) }), 201);
    await revokeCredential(db.pool, c.id);
    const tasks = await countTasks();
    expectError(await call(gw.url, 'POST', '/v1/tasks', { token: c.token, key: ikey(), body: taskBody(a.queue_id) }), 401, 'UNAUTHENTICATED');
    expectError(await call(gw.url, 'POST', '/v1/tasks', { token: c.token, rawBody: '{{{{', key: ikey() }), 401, 'UNAUTHENTICATED');
    expectError(await call(gw.url, 'POST', '/v1/tasks', { token: c.token, body: taskBody(a.queue_id) }), 401, 'UNAUTHENTICATED');
    expect(await countTasks()).toBe(tasks);
  });

  it('a revoked token cannot replay its own receipt', async () => {
    const c = await limitedCredential(db, a.namespace_id, ['tasks:submit']);
    const key = ikey();
    expectData(await call(gw.url, 'POST', '/v1/tasks', { token: c.token, key, body: taskBody(a.queue_id) }), 201);
    await revokeCredential(db.pool, c.id);
    expectError(await call(gw.url, 'POST', '/v1/tasks', { token: c.token, key, body: taskBody(a.queue_id) }), 401, 'UNAUTHENTICATED');
  });
});

describe('authorization: scopes', () => {
  it('tasks:read only cannot submit (403) and nothing is stored', async () => {
    const c = await limitedCredential(db, a.namespace_id, ['tasks:read']);
    const tasks = await countTasks();
    const receipts = await countReceipts();
    expectError(await call(gw.url, 'POST', '/v1/tasks', { token: c.token, key: ikey(), body: taskBody(a.queue_id) }), 403, 'PERMISSION_DENIED');
    expect(await countTasks()).toBe(tasks);
    expect(await countReceipts()).toBe(receipts);
    expectData(await call(gw.url, 'GET', `/v1/tasks/${taskA1.id}`, { token: c.token }), 200);
    expectData(await call(gw.url, 'GET', '/v1/tasks', { token: c.token }), 200);
  });

  it('tasks:submit only cannot read tasks (403)', async () => {
    const c = await limitedCredential(db, a.namespace_id, ['tasks:submit']);
    expectError(await call(gw.url, 'GET', `/v1/tasks/${taskA1.id}`, { token: c.token }), 403, 'PERMISSION_DENIED');
    expectError(await call(gw.url, 'GET', '/v1/tasks', { token: c.token }), 403, 'PERMISSION_DENIED');
    expectData(await call(gw.url, 'POST', '/v1/tasks', { token: c.token, key: ikey(), body: taskBody(a.queue_id) }), 201);
  });

  it('without queues:manage every queue route is 403', async () => {
    const c = await limitedCredential(db, a.namespace_id, ['tasks:submit', 'tasks:read', 'events:manage', 'events:read', 'workers:connect', 'workers:consume']);
    expectError(await call(gw.url, 'GET', '/v1/queues', { token: c.token }), 403, 'PERMISSION_DENIED');
    expectError(await call(gw.url, 'GET', `/v1/queues/${a.queue_id}`, { token: c.token }), 403, 'PERMISSION_DENIED');
    expectError(await call(gw.url, 'POST', '/v1/queues', { token: c.token, key: ikey(), body: { name: 'nope' } }), 403, 'PERMISSION_DENIED');
    expectError(
      await call(gw.url, 'POST', `/v1/queues/${a.queue_id}:pause`, { token: c.token, key: ikey(), body: { expected_revision: '1' } }),
      403,
      'PERMISSION_DENIED',
    );
    expectError(
      await call(gw.url, 'POST', `/v1/queues/${a.queue_id}:resume`, { token: c.token, key: ikey(), body: { expected_revision: '1' } }),
      403,
      'PERMISSION_DENIED',
    );
    const [rows] = (await db.pool.query('SELECT COUNT(*) AS n FROM queues WHERE name = ?', ['nope'])) as any;
    expect(Number(rows[0].n)).toBe(0);
  });

  it('a credential with no scopes at all is 403 everywhere (authenticated, not authorized)', async () => {
    const c = await limitedCredential(db, a.namespace_id, []);
    expectError(await call(gw.url, 'GET', '/v1/tasks', { token: c.token }), 403, 'PERMISSION_DENIED');
    expectError(await call(gw.url, 'POST', '/v1/tasks', { token: c.token, key: ikey(), body: taskBody(a.queue_id) }), 403, 'PERMISSION_DENIED');
  });
});

describe('authorization: queue_ids', () => {
  let q1Only: { id: string; token: string };
  beforeAll(async () => {
    q1Only = await limitedCredential(db, a.namespace_id, ['tasks:submit', 'tasks:read', 'queues:manage'], [a.queues.q1!]);
  });

  it('submitting to a queue of the namespace outside queue_ids → 403, nothing stored', async () => {
    const tasks = await countTasks();
    const key = ikey();
    expectError(await call(gw.url, 'POST', '/v1/tasks', { token: q1Only.token, key, body: taskBody(a.queues.q2!) }), 403, 'PERMISSION_DENIED');
    expect(await countTasks()).toBe(tasks);
    // The key was not consumed.
    expectData(await call(gw.url, 'POST', '/v1/tasks', { token: q1Only.token, key, body: taskBody(a.queues.q1!) }), 201);
  });

  it('a receipt created by an all-queue credential is not replayed to a credential without the queue', async () => {
    const key = ikey();
    expectData(await call(gw.url, 'POST', '/v1/tasks', { token: a.token, key, body: taskBody(a.queues.q2!) }), 201);
    expectError(await call(gw.url, 'POST', '/v1/tasks', { token: q1Only.token, key, body: taskBody(a.queues.q2!) }), 403, 'PERMISSION_DENIED');
  });

  it('reading a task of a queue outside queue_ids → 403', async () => {
    expectData(await call(gw.url, 'GET', `/v1/tasks/${taskA1.id}`, { token: q1Only.token }), 200);
    expectError(await call(gw.url, 'GET', `/v1/tasks/${taskA2.id}`, { token: q1Only.token }), 403, 'PERMISSION_DENIED');
  });

  it('listing tasks only shows permitted queues; filtering by a forbidden queue → 403', async () => {
    const data = expectData(await call(gw.url, 'GET', '/v1/tasks?limit=500', { token: q1Only.token }), 200);
    expect(data.tasks.length).toBeGreaterThan(0);
    for (const t of data.tasks) expect(t.queue_id).toBe(a.queues.q1);
    expectError(await call(gw.url, 'GET', `/v1/tasks?queue_id=${a.queues.q2}`, { token: q1Only.token }), 403, 'PERMISSION_DENIED');
  });

  it('queue get/pause outside queue_ids → 403; list shows only permitted queues', async () => {
    expectError(await call(gw.url, 'GET', `/v1/queues/${a.queues.q2}`, { token: q1Only.token }), 403, 'PERMISSION_DENIED');
    expectError(
      await call(gw.url, 'POST', `/v1/queues/${a.queues.q2}:pause`, { token: q1Only.token, key: ikey(), body: { expected_revision: '1' } }),
      403,
      'PERMISSION_DENIED',
    );
    const list = expectData(await call(gw.url, 'GET', '/v1/queues', { token: q1Only.token }), 200);
    expect(list.queues.map((q: any) => q.id)).toEqual([a.queues.q1]);
    expectData(await call(gw.url, 'GET', `/v1/queues/${a.queues.q1}`, { token: q1Only.token }), 200);
  });

  it('an empty queue_ids list permits no queue', async () => {
    const none = await limitedCredential(db, a.namespace_id, ['tasks:submit', 'tasks:read', 'queues:manage'], []);
    expectError(await call(gw.url, 'POST', '/v1/tasks', { token: none.token, key: ikey(), body: taskBody(a.queues.q1!) }), 403, 'PERMISSION_DENIED');
    expect(expectData(await call(gw.url, 'GET', '/v1/tasks', { token: none.token }), 200).tasks).toEqual([]);
    expect(expectData(await call(gw.url, 'GET', '/v1/queues', { token: none.token }), 200).queues).toEqual([]);
  });

  it('"*" includes queues created later', async () => {
    const all = await limitedCredential(db, a.namespace_id, ['tasks:submit', 'queues:manage']);
    const q = expectData(await call(gw.url, 'POST', '/v1/queues', { token: a.token, key: ikey(), body: { name: 'later' } }), 201).queue;
    expectData(await call(gw.url, 'POST', '/v1/tasks', { token: all.token, key: ikey(), body: taskBody(q.id) }), 201);
    expectData(await call(gw.url, 'GET', `/v1/queues/${q.id}`, { token: all.token }), 200);
  });
});

describe('authorization: other namespaces are invisible (404)', () => {
  it("another namespace's task → 404, same as a nonexistent one", async () => {
    const other = expectError(await call(gw.url, 'GET', `/v1/tasks/${taskB.id}`, { token: a.token }), 404, 'NOT_FOUND');
    const absent = expectError(await call(gw.url, 'GET', `/v1/tasks/${'0'.repeat(32)}`, { token: a.token }), 404, 'NOT_FOUND');
    expect(other.message).toBe(absent.message);
    expectError(await call(gw.url, 'GET', '/v1/tasks/not-an-id', { token: a.token }), 404, 'NOT_FOUND');
    expectError(await call(gw.url, 'GET', `/v1/tasks/${taskA1.id.toUpperCase()}`, { token: a.token }), 404, 'NOT_FOUND');
  });

  it("another namespace's queue → 404 for submit, get, pause, resume and list filter", async () => {
    const tasks = await countTasks();
    const bq = b.queue_id;
    const absent = 'f'.repeat(32);
    for (const q of [bq, absent, 'not-an-id']) {
      expectError(await call(gw.url, 'POST', '/v1/tasks', { token: a.token, key: ikey(), body: taskBody(q) }), 404, 'NOT_FOUND');
      expectError(await call(gw.url, 'GET', `/v1/queues/${q}`, { token: a.token }), 404, 'NOT_FOUND');
      expectError(await call(gw.url, 'POST', `/v1/queues/${q}:pause`, { token: a.token, key: ikey(), body: { expected_revision: '1' } }), 404, 'NOT_FOUND');
      expectError(await call(gw.url, 'POST', `/v1/queues/${q}:resume`, { token: a.token, key: ikey(), body: { expected_revision: '1' } }), 404, 'NOT_FOUND');
      expectError(await call(gw.url, 'GET', `/v1/tasks?queue_id=${q}`, { token: a.token }), 404, 'NOT_FOUND');
    }
    expect(await countTasks()).toBe(tasks);
    const [rows] = (await db.pool.query('SELECT revision, paused FROM queues WHERE id = ?', [bq])) as any;
    expect(String(rows[0].revision)).toBe('1');
    expect(Number(rows[0].paused)).toBe(0);
  });

  it("a limited credential gets 404 (not 403) for another namespace's queue", async () => {
    const c = await limitedCredential(db, a.namespace_id, ['tasks:submit', 'queues:manage'], [a.queues.q1!]);
    expectError(await call(gw.url, 'POST', '/v1/tasks', { token: c.token, key: ikey(), body: taskBody(b.queue_id) }), 404, 'NOT_FOUND');
    expectError(await call(gw.url, 'POST', '/v1/tasks', { token: c.token, key: ikey(), body: taskBody('e'.repeat(32)) }), 404, 'NOT_FOUND');
    expectError(await call(gw.url, 'GET', `/v1/queues/${b.queue_id}`, { token: c.token }), 404, 'NOT_FOUND');
  });

  it("listings never show another namespace's tasks or queues", async () => {
    const tasks = expectData(await call(gw.url, 'GET', '/v1/tasks?limit=500', { token: a.token }), 200).tasks;
    expect(tasks.length).toBeGreaterThan(0);
    for (const t of tasks) expect(t.namespace_id).toBe(a.namespace_id);
    expect(tasks.map((t: any) => t.id)).not.toContain(taskB.id);
    const queues = expectData(await call(gw.url, 'GET', '/v1/queues', { token: a.token }), 200).queues;
    for (const q of queues) expect(q.namespace_id).toBe(a.namespace_id);
    const bTasks = expectData(await call(gw.url, 'GET', '/v1/tasks', { token: b.token }), 200).tasks;
    expect(bTasks.map((t: any) => t.id)).toEqual([taskB.id]);
  });

  it('a second namespace of the same application is isolated too', async () => {
    const sibling = await newTenant(db, { application: 'shared-app-x', queues: ['q1'] });
    const sibling2 = await newTenant(db, { application: 'shared-app-x', queues: ['q1'] });
    expect(sibling.application_id).toBe(sibling2.application_id);
    expect(sibling.namespace_id).not.toBe(sibling2.namespace_id);
    const t = expectData(await call(gw.url, 'POST', '/v1/tasks', { token: sibling.token, key: ikey(), body: taskBody(sibling.queue_id) }), 201).task;
    expectError(await call(gw.url, 'GET', `/v1/tasks/${t.id}`, { token: sibling2.token }), 404, 'NOT_FOUND');
    expectError(await call(gw.url, 'POST', '/v1/tasks', { token: sibling2.token, key: ikey(), body: taskBody(sibling.queue_id) }), 404, 'NOT_FOUND');
  });
});
