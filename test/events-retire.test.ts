// Retirement of subscriptions and queues over raw HTTP: every refusal with its code and unchanged
// state, every success with its fields, receipts replayed after retirement, new work refused.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { hello, openRaw } from './support/raw-worker.js';
import { ack, createSub, extraCredential, getSub, lease, makeEvents } from './support/events.js';
import { newId } from '../server/ids.js';
import { packageRoot } from '../server/paths.js';
import { createQueue } from './support/dispatch-fixture.js';
import { defaultTaskBody, postTask } from './support/submit.js';

const f = useGatewayFixture();

async function row(table: 'queues' | 'subscriptions', id: string): Promise<RowDataPacket> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>(`SELECT * FROM ${table} WHERE id = ?`, [id]);
  return rows[0]!;
}
async function audits(id: string, action: string): Promise<RowDataPacket[]> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT * FROM audit_log WHERE target_id = ? AND action = ?', [id, action]);
  return rows;
}
// key null = send no Idempotency-Key
const retireSub = (id: string, body: unknown, key: string | null = ikey(), token = f.t.token) =>
  call(f.gw.url, 'POST', `/v1/subscriptions/${id}:retire`, { token, key: key ?? undefined, body });
const retireQ = (id: string, body: unknown, key: string | null = ikey(), token = f.t.token) =>
  call(f.gw.url, 'POST', `/v1/queues/${id}:retire`, { token, key: key ?? undefined, body });
const submit = (queueId: string, over: Record<string, unknown> = {}) => postTask(f.gw.url, f.t.token, defaultTaskBody(queueId, { payload: {}, ...over }));

describe('POST /v1/subscriptions/{id}:retire', () => {
  it('refuses while anything is unconsumed (RESOURCE_BUSY naming it) and changes nothing; then retires', async () => {
    const q = await createQueue(f, { name: 'sub-retire-q', lease_seconds: 30 });
    const s = await createSub(f.gw.url, f.t.token, { name: 'sub-retire', queue_id: q.id, event_types: ['task.succeeded'] });
    const expectRefused = async (body: unknown, status: number, code: string, msg?: RegExp) => {
      const before = await row('subscriptions', s.id);
      const r = await retireSub(s.id, body);
      expect(r.status, r.text).toBe(status);
      expect(r.body.error.code).toBe(code);
      if (msg) expect(r.body.error.message).toMatch(msg);
      expect(await row('subscriptions', s.id)).toEqual(before);
      expect(await audits(s.id, 'subscription.retire')).toHaveLength(0);
    };
    // 400s: body and headers
    await expectRefused({ expected_revision: '1', reason: '' }, 400, 'INVALID_ARGUMENT');
    await expectRefused({ expected_revision: '1', reason: 'x'.repeat(513) }, 400, 'INVALID_ARGUMENT');
    await expectRefused({ expected_revision: 1, reason: 'x' }, 400, 'INVALID_ARGUMENT');
    await expectRefused({ expected_revision: '1' }, 400, 'INVALID_ARGUMENT');
    expect((await retireSub(s.id, { expected_revision: '1', reason: 'x' }, null)).status).toBe(400);
    expect(
      (
        await call(f.gw.url, 'POST', `/v1/subscriptions/${s.id}:retire?force=1`, {
          token: f.t.token,
          key: ikey(),
          body: { expected_revision: '1', reason: 'x' },
        })
      ).status,
    ).toBe(400);
    const readOnly = await extraCredential(f.db.pool, f.t, ['events:read']);
    expect((await retireSub(s.id, { expected_revision: '1', reason: 'x' }, ikey(), readOnly.token)).status).toBe(403);
    // Unmaterialized matching events up to the watermark.
    await makeEvents(f.db.pool, f.t, q.id, 3);
    await makeEvents(f.db.pool, f.t, q.id, 2, 'task.failed'); // outside the filter: never blocks
    await expectRefused({ expected_revision: '1', reason: 'done' }, 409, 'RESOURCE_BUSY', /3 matching events .* not yet delivered/);
    // Materialized but PENDING / LEASED / EXPIRED deliveries.
    const ds = await lease(f.gw.url, f.t.token, s.id, 1, 5);
    await expectRefused({ expected_revision: '1', reason: 'done' }, 409, 'RESOURCE_BUSY', /3 deliveries not acknowledged/);
    await f.db.pool.query('UPDATE deliveries SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE id = ?', [ds[0].id]);
    const more = await lease(f.gw.url, f.t.token, s.id, 100, 5);
    expect(more).toHaveLength(3);
    expect(
      await ack(
        f.gw.url,
        f.t.token,
        s.id,
        more.slice(0, 2).map((d) => d.id),
      ),
    ).toBe(2);
    await expectRefused({ expected_revision: '1', reason: 'done' }, 409, 'RESOURCE_BUSY', /1 deliveries not acknowledged/);
    expect(await ack(f.gw.url, f.t.token, s.id, [more[2].id])).toBe(1);
    // Stale revision.
    await expectRefused({ expected_revision: '2', reason: 'done' }, 409, 'STATE_CONFLICT', /expected_revision/);
    // Pause it: a paused subscription can be retired.
    const p = await call(f.gw.url, 'POST', `/v1/subscriptions/${s.id}:pause`, { token: f.t.token, key: ikey(), body: { expected_revision: '1' } });
    expect(p.status).toBe(200);
    const [[head]] = (await f.db.pool.query('SELECT last_sequence FROM stream_heads WHERE namespace_id = ?', [f.t.namespace_id])) as any;
    const key = ikey();
    const ok = await retireSub(s.id, { reason: 'consumer finished', expected_revision: '2' }, key);
    expect(ok.status, ok.text).toBe(200);
    const v = ok.body.data.subscription;
    expect(ok.body.data.deduplicated).toBe(false);
    expect(v).toMatchObject({
      id: s.id,
      enabled: false,
      paused: true,
      revision: '3',
      pending_count: 0,
      cursor: String(head.last_sequence),
      retired_sequence: String(head.last_sequence),
    });
    expect(Date.parse(v.retired_at)).toBeGreaterThan(0);
    const au = await audits(s.id, 'subscription.retire');
    expect(au).toHaveLength(1);
    expect(JSON.parse(au[0]!.details)).toMatchObject({ reason: 'consumer finished' });
    // Later events never belong to it.
    await makeEvents(f.db.pool, f.t, q.id, 2);
    const read = await getSub(f.gw.url, f.t.token, s.id);
    expect(read).toEqual(v);
    // Receipt replays after retirement (key order irrelevant); different content → 409.
    const replay = await retireSub(s.id, { expected_revision: '2', reason: 'consumer finished' }, key);
    expect(replay.status).toBe(200);
    expect(replay.body.data).toEqual({ subscription: v, deduplicated: true });
    const conflict = await retireSub(s.id, { expected_revision: '2', reason: 'something else' }, key);
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    // It cannot be retired again, resumed, paused or leased from.
    const again = await retireSub(s.id, { expected_revision: '3', reason: 'again' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('STATE_CONFLICT');
    const resume = await call(f.gw.url, 'POST', `/v1/subscriptions/${s.id}:resume`, { token: f.t.token, key: ikey(), body: { expected_revision: '3' } });
    expect(resume.status).toBe(409);
    expect(resume.body.error.code).toBe('STATE_CONFLICT');
    const l = await call(f.gw.url, 'POST', `/v1/subscriptions/${s.id}/deliveries:lease`, { token: f.t.token, body: { max: 1, lease_seconds: 5 } });
    expect(l.status).toBe(409);
    expect(l.body.error.code).toBe('RESOURCE_RETIRED');
    // Still listed and its history readable.
    const list = await call(f.gw.url, 'GET', '/v1/subscriptions', { token: f.t.token });
    expect(list.body.data.subscriptions.find((x: any) => x.id === s.id)).toEqual(v);
    const hist = await call(f.gw.url, 'GET', `/v1/subscriptions/${s.id}/deliveries`, { token: f.t.token });
    expect(hist.body.data.deliveries).toHaveLength(3);
    expect(await f.db.pool.query('SELECT COUNT(*) AS n FROM subscriptions WHERE id = ?', [s.id]).then(([r]: any) => Number(r[0].n))).toBe(1);
  });
});

describe('POST /v1/queues/{id}:retire', () => {
  async function expectBusy(qid: string, rev: string, reason: string, msg: RegExp) {
    const before = await row('queues', qid);
    const r = await retireQ(qid, { expected_revision: rev, reason: 'cleanup' });
    expect(r.status, r.text).toBe(409);
    expect(r.body.error.code).toBe('RESOURCE_BUSY');
    expect(r.body.error.message).toMatch(msg);
    expect(r.body.error.details.reasons).toContain(reason);
    expect(await row('queues', qid)).toEqual(before);
    expect(await audits(qid, 'queue.retire')).toHaveLength(0);
    return r.body.error;
  }

  it('unfinished tasks block it', async () => {
    const q = await createQueue(f, { name: 'busy-waiting', lease_seconds: 30 });
    expect((await submit(q.id)).status).toBe(201);
    const e = await expectBusy(q.id, '1', 'unfinished_tasks', /1 unfinished tasks \(WAITING 1\)/);
    expect(e.details.reasons).toEqual(['unfinished_tasks']);
  });

  it('NEEDS_REVIEW tasks block it and are named by id', async () => {
    const q = await createQueue(f, { name: 'busy-review', lease_seconds: 30 });
    await makeEvents(f.db.pool, f.t, q.id, 1, 'task.needs_review');
    const [[task]] = (await f.db.pool.query(`SELECT id FROM tasks WHERE queue_id = ? AND state = 'NEEDS_REVIEW'`, [q.id])) as any;
    const e = await expectBusy(q.id, '1', 'needs_review_tasks', new RegExp(`1 tasks in NEEDS_REVIEW.*${task.id}`));
    expect(e.details.blockers[0].task_ids).toEqual([task.id]);
  });

  it('in-flight attempts and their permits block it', async () => {
    const q = await createQueue(f, { name: 'busy-inflight', lease_seconds: 30 });
    const w = await openRaw(f.gw.url, f.t.token);
    w.send(hello([q.id], { concurrency_keys: true }));
    await w.next('hello.ok');
    expect((await submit(q.id, { concurrency_key: 'object/inflight' })).status).toBe(201);
    const assign = await w.next('task.assign');
    const e = await expectBusy(q.id, '1', 'in_flight_attempts', /1 in-flight attempts/);
    expect(e.details.reasons).toEqual(['unfinished_tasks', 'in_flight_attempts', 'unreleased_permits', 'held_resource_keys']);
    expect(e.message).toMatch(/queue permits not released/);
    expect(e.message).toMatch(/resource-key permits held/);
    w.send({ type: 'start', attempt_id: assign.attempt_id });
    await w.next('start.ok');
    w.send({ type: 'result', attempt_id: assign.attempt_id, outcome: 'succeeded' });
    await w.next('result.ok');
    w.close();
    const ok = await retireQ(q.id, { expected_revision: '1', reason: 'drained' });
    expect(ok.status, ok.text).toBe(200);
  });

  it('an unreleased queue permit alone, or a key held by an attempt of the queue alone, blocks it', async () => {
    const q = await createQueue(f, { name: 'busy-permit', lease_seconds: 30 });
    await f.db.pool.query('UPDATE queues SET active_attempts = 1 WHERE id = ?', [q.id]);
    const e = await expectBusy(q.id, '1', 'unreleased_permits', /1 queue permits not released/);
    expect(e.details.reasons).toEqual(['unreleased_permits']);
    await f.db.pool.query('UPDATE queues SET active_attempts = 0 WHERE id = ?', [q.id]);
    // A finished attempt still recorded as the key's holder (a release that never happened).
    await makeEvents(f.db.pool, f.t, q.id, 1);
    const [[task]] = (await f.db.pool.query('SELECT id FROM tasks WHERE queue_id = ?', [q.id])) as any;
    const attemptId = newId();
    await f.db.pool.query(
      `INSERT INTO attempts (id, task_id, namespace_id, application_id, queue_id, attempt_no, state, worker_id, session_id, concurrency_key, concurrency_token, leased_at, lease_expires_at)
       VALUES (?, ?, ?, ?, ?, 1, 'SUCCEEDED', 'w', ?, 'held/key', 1, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
      [attemptId, task.id, f.t.namespace_id, f.t.application_id, q.id, newId()],
    );
    await f.db.pool.query(
      `INSERT INTO resource_keys (namespace_id, concurrency_key, highest_token, holder_attempt_id, version, created_at, updated_at)
       VALUES (?, 'held/key', 1, ?, 1, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
      [f.t.namespace_id, attemptId],
    );
    const e2 = await expectBusy(q.id, '1', 'held_resource_keys', /1 resource-key permits held by attempts of this queue/);
    expect(e2.details.reasons).toEqual(['held_resource_keys']);
    await f.db.pool.query(`UPDATE resource_keys SET holder_attempt_id = NULL WHERE namespace_id = ? AND concurrency_key = 'held/key'`, [f.t.namespace_id]);
    expect((await retireQ(q.id, { expected_revision: '1', reason: 'clean' })).status).toBe(200);
  });

  it('non-retired subscriptions (paused included) block it', async () => {
    const q = await createQueue(f, { name: 'busy-subs', lease_seconds: 30 });
    const s = await createSub(f.gw.url, f.t.token, { name: 'blocks-queue', queue_id: q.id, event_types: ['task.failed'] });
    await call(f.gw.url, 'POST', `/v1/subscriptions/${s.id}:pause`, { token: f.t.token, key: ikey(), body: { expected_revision: '1' } });
    await expectBusy(q.id, '1', 'subscriptions', /1 non-retired subscriptions \(paused included\) target this queue/);
    expect((await retireSub(s.id, { expected_revision: '2', reason: 'first' })).status).toBe(200);
    expect((await retireQ(q.id, { expected_revision: '1', reason: 'second' })).status).toBe(200);
  });

  it('authorization and validation: 403 scope, 403 queue_ids, 404 elsewhere, 400 body, 409 stale revision', async () => {
    const q = await createQueue(f, { name: 'auth-retire', lease_seconds: 30 });
    const before = await row('queues', q.id);
    const noScope = await extraCredential(f.db.pool, f.t, ['tasks:submit']);
    expect((await retireQ(q.id, { expected_revision: '1', reason: 'x' }, ikey(), noScope.token)).status).toBe(403);
    const limited = await extraCredential(f.db.pool, f.t, ['queues:manage'], [f.t.queue_id]);
    expect((await retireQ(q.id, { expected_revision: '1', reason: 'x' }, ikey(), limited.token)).status).toBe(403);
    const t2 = await newTenant(f.db);
    expect((await retireQ(q.id, { expected_revision: '1', reason: 'x' }, ikey(), t2.token)).status).toBe(404);
    expect((await retireQ('0'.repeat(32), { expected_revision: '1', reason: 'x' })).status).toBe(404);
    expect((await retireQ(q.id, { expected_revision: '1', reason: '' })).status).toBe(400);
    expect((await retireQ(q.id, { expected_revision: '1' })).status).toBe(400);
    expect((await retireQ(q.id, { expected_revision: '1', reason: 'x', force: true })).status).toBe(400);
    expect((await retireQ(q.id, { expected_revision: '1', reason: 'x' }, null)).status).toBe(400);
    const stale = await retireQ(q.id, { expected_revision: '9', reason: 'x' });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('STATE_CONFLICT');
    expect(await row('queues', q.id)).toEqual(before);
  });

  it('retires an empty queue: paused, retired_at, revision; replays; new work → RESOURCE_RETIRED; history kept', async () => {
    const q = await createQueue(f, { name: 'retire-ok', lease_seconds: 30 });
    expect((await submit(q.id)).status).toBe(201);
    const [[task]] = (await f.db.pool.query('SELECT id FROM tasks WHERE queue_id = ?', [q.id])) as any;
    const c = await call(f.gw.url, 'POST', `/v1/tasks/${task.id}:cancel`, { token: f.t.token, key: ikey(), body: {} });
    expect(c.status).toBe(200);
    const key = ikey();
    const ok = await retireQ(q.id, { expected_revision: '1', reason: 'no longer used' }, key);
    expect(ok.status, ok.text).toBe(200);
    const v = ok.body.data.queue;
    expect(v).toMatchObject({ id: q.id, name: 'retire-ok', paused: true, revision: '2', active_attempts: 0 });
    expect(Date.parse(v.retired_at)).toBeGreaterThan(0);
    const r = await row('queues', q.id);
    expect(r.retire_reason).toBe('no longer used');
    expect(await audits(q.id, 'queue.retire')).toHaveLength(1);
    // replay, conflict
    const replay = await retireQ(q.id, { reason: 'no longer used', expected_revision: '1' }, key);
    expect(replay.status).toBe(200);
    expect(replay.body.data).toEqual({ queue: v, deduplicated: true });
    const conflict = await retireQ(q.id, { expected_revision: '2', reason: 'no longer used' }, key);
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    // new work
    const s = await submit(q.id);
    expect(s.status).toBe(409);
    expect(s.body.error.code).toBe('RESOURCE_RETIRED');
    const sub = await call(f.gw.url, 'POST', '/v1/subscriptions', {
      token: f.t.token,
      key: ikey(),
      body: { name: 'on-retired', queue_id: q.id, event_types: ['task.failed'] },
    });
    expect(sub.status).toBe(409);
    expect(sub.body.error.code).toBe('RESOURCE_RETIRED');
    const w = await openRaw(f.gw.url, f.t.token);
    w.send(hello([q.id]));
    const err = await w.next('error');
    expect(err.code).toBe('RESOURCE_RETIRED');
    w.close();
    for (const action of ['pause', 'resume', 'retire']) {
      const x = await call(f.gw.url, 'POST', `/v1/queues/${q.id}:${action}`, {
        token: f.t.token,
        key: ikey(),
        body: action === 'retire' ? { expected_revision: '2', reason: 'x' } : { expected_revision: '2' },
      });
      expect(x.status, action).toBe(409);
      expect(x.body.error.code).toBe('STATE_CONFLICT');
    }
    const dupName = await call(f.gw.url, 'POST', '/v1/queues', { token: f.t.token, key: ikey(), body: { name: 'retire-ok' } });
    expect(dupName.status).toBe(409);
    expect(dupName.body.error.code).toBe('STATE_CONFLICT');
    // history
    expect((await call(f.gw.url, 'GET', `/v1/queues/${q.id}`, { token: f.t.token })).body.data.queue).toEqual(v);
    const tasks = await call(f.gw.url, 'GET', `/v1/tasks?queue_id=${q.id}`, { token: f.t.token });
    expect(tasks.body.data.tasks.map((x: any) => x.id)).toEqual([task.id]);
    expect((await call(f.gw.url, 'GET', `/v1/tasks/${task.id}`, { token: f.t.token })).body.data.task.state).toBe('CANCELLED');
  });
});

describe('examples/resource-lifecycle', () => {
  it('creates an empty queue and subscription and retires both, printing the ids', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-lifecycle-'));
    const file = path.join(dir, 'creds.json');
    fs.writeFileSync(file, JSON.stringify({ ...f.t, url: f.gw.url }), { mode: 0o600 });
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(packageRoot(), 'dist/examples/resource-lifecycle/main.js')], {
      env: { ...process.env, ORBIT_URL: f.gw.url, ORBIT_CREDENTIALS_FILE: file },
    });
    expect(stdout).toMatch(/^queue_id=[0-9a-f]{32} name=lifecycle-/m);
    expect(stdout).toMatch(/^subscription_id=[0-9a-f]{32} cursor=\d+$/m);
    expect(stdout).toMatch(/^subscription_retired=true retired_sequence=\d+$/m);
    expect(stdout).toMatch(/^queue_retired=true retired_at=\S+Z$/m);
    const qid = /queue_id=([0-9a-f]{32})/.exec(stdout)![1]!;
    expect((await row('queues', qid)).retired_at).not.toBeNull();
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
