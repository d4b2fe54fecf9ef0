// Error messages that say what to do (docs/http-api.md "Envelope"): a queue name where an id is expected,
// valid values of an enum, every violation of a body, the limit of a quota, 405 with Allow for a
// wrong method, a bad short token, a missing credentials file in an example.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../server/paths.js';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { expectData, expectError } from './support/contract.js';

const f = useGatewayFixture();
const task = (queue_id: string, extra: Record<string, unknown> = {}) => ({
  queue_id,
  handler: 'h',
  handler_version: 'v1',
  payload_version: 'v1',
  payload: {},
  ...extra,
});

describe('a queue name where an id is expected', () => {
  it('submit with the name of an existing queue: 404 naming its id', async () => {
    const err = expectError(await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), body: task('initial') }), 404, 'NOT_FOUND');
    expect(err.message).toBe(`queue_id expects a queue id, not a name: the queue named "initial" has id ${f.t.queue_id}`);
    expect(err.details).toEqual({ field: 'queue_id', queue_id: f.t.queue_id });
  });

  it('a name no queue has: 404 saying queue_id is an id and where ids are listed', async () => {
    const err = expectError(await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), body: task('emails') }), 404, 'NOT_FOUND');
    expect(err.message).toMatch(/queue_id is a 32-hex queue id \(GET \/v1\/queues lists them\), not a name/);
  });

  it("list and subscription creation give the same hint; another namespace's queue names stay hidden", async () => {
    const list = expectError(await call(f.gw.url, 'GET', '/v1/tasks?queue_id=initial', { token: f.t.token }), 404, 'NOT_FOUND');
    expect(list.message).toContain(f.t.queue_id);
    const sub = expectError(
      await call(f.gw.url, 'POST', '/v1/subscriptions', {
        token: f.t.token,
        key: ikey(),
        body: { name: 'hint-sub', queue_id: 'initial', event_types: ['task.failed'] },
      }),
      404,
      'NOT_FOUND',
    );
    expect(sub.message).toContain(f.t.queue_id);
    const other = await newTenant(f.db, { queues: ['secret-name'] });
    const hidden = expectError(await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), body: task('secret-name') }), 404, 'NOT_FOUND');
    expect(hidden.message).not.toContain(other.queue_id);
  });
});

describe('valid values and every violation', () => {
  it('an unknown task state lists the valid ones', async () => {
    const err = expectError(await call(f.gw.url, 'GET', '/v1/tasks?state=DONE', { token: f.t.token }), 400, 'INVALID_ARGUMENT');
    expect(err.message).toBe('state: "DONE" is not one of WAITING, LEASED, RUNNING, NEEDS_REVIEW, SUCCEEDED, FAILED, CANCELLED, DEADLINE_EXCEEDED');
    expect(err.details).toMatchObject({ field: 'state', allowed: expect.arrayContaining(['WAITING', 'SUCCEEDED']) });
  });

  it('an enum field in a body names its values', async () => {
    const err = expectError(
      await call(f.gw.url, 'POST', `/v1/tasks/${'a'.repeat(32)}:resolve`, { token: f.t.token, key: ikey(), body: { resolution: 'done' } }),
      400,
      'INVALID_ARGUMENT',
    );
    expect(err.message).toBe('resolution: must be one of succeeded, failed, retry');
  });

  it('a body with several problems lists all of them in details.violations', async () => {
    const body = { queue_id: f.t.queue_id, handler: 'bad handler', handler_version: '', payload_version: 'v1', payload: {}, priority: 12, colour: 'red' };
    const err = expectError(await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), body }), 400, 'INVALID_ARGUMENT');
    const fields = (err.details!.violations as { field: string }[]).map((v) => v.field).sort();
    expect(fields).toEqual(['colour', 'handler', 'handler_version', 'priority']);
    expect(err.details!.field).toBe((err.details!.violations as { field: string }[])[0]!.field);
    expect(err.message).toMatch(/\(and 3 more: /);
  });
});

describe('limits and methods', () => {
  it('429 states the quota, its limit and how to raise it', async () => {
    const q = await newTenant(f.db);
    await f.db.pool.query('UPDATE applications SET max_unfinished_tasks = 1 WHERE id = ?', [q.application_id]);
    expectData(await call(f.gw.url, 'POST', '/v1/tasks', { token: q.token, key: ikey(), body: task(q.queue_id) }), 201);
    const err = expectError(await call(f.gw.url, 'POST', '/v1/tasks', { token: q.token, key: ikey(), body: task(q.queue_id) }), 429, 'QUOTA_EXCEEDED');
    expect(err.message).toContain('(limit 1)');
    expect(err.message).toContain(`orbit-admin quota set --application-id ${q.application_id} --max-unfinished-tasks N`);
    expect(err.details).toEqual({ quota: 'max_unfinished_tasks', limit: 1 });
  });

  it('a wrong method on an existing path is 405 with Allow; an unknown path stays 404', async () => {
    const r = await call(f.gw.url, 'DELETE', '/v1/tasks', { token: f.t.token });
    const err = expectError(r, 405, 'METHOD_NOT_ALLOWED');
    expect(r.headers.get('allow')).toBe('GET, POST');
    expect(err.details).toEqual({ allow: ['GET', 'POST'] });
    const pause = await call(f.gw.url, 'GET', `/v1/queues/${f.t.queue_id}:pause`, { token: f.t.token });
    expectError(pause, 405, 'METHOD_NOT_ALLOWED');
    expect(pause.headers.get('allow')).toBe('POST');
    expectError(await call(f.gw.url, 'DELETE', '/v1/nothing-here', { token: f.t.token }), 404, 'NOT_FOUND');
  });
});

describe('credentials', () => {
  const cases: [string, Record<string, string>, RegExp][] = [
    ['no header', {}, /^missing Authorization header: send Authorization: Bearer <token>$/],
    ['another scheme', { authorization: 'Basic dXNlcjpwYXNz' }, /must use the Bearer scheme/],
    ['a short token', { authorization: 'Bearer abc' }, /^unknown or revoked credential/],
    ['a token with bad bytes', { authorization: 'Bearer orb_!!!!!!!!!!!!' }, /^unknown or revoked credential/],
  ];
  for (const [name, headers, msg] of cases) {
    it(`${name} → 401 saying what is wrong`, async () => {
      const err = expectError(await call(f.gw.url, 'GET', '/v1/queues', { headers }), 401, 'UNAUTHENTICATED');
      expect(err.message).toMatch(msg);
    });
  }

  it('an example without its credentials file prints one line and exits 1 (no stack trace)', async () => {
    const child = spawn(process.execPath, [path.join(packageRoot(), 'dist/examples/resource-lifecycle/main.js')], {
      env: { PATH: process.env.PATH, ORBIT_CREDENTIALS_FILE: '/nonexistent/creds.json' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((r) => child.once('close', (c) => r(c)));
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/cannot read ORBIT_CREDENTIALS_FILE \/nonexistent\/creds\.json: .*npm start/);
  });
});
