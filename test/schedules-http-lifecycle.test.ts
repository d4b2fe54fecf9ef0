// POST /v1/schedules/{id} lifecycle (docs/schedules.md): versions, pause, resume, retire, trigger, queue
// retirement with schedules, reads and the SDK client. Creation and its validation: schedules-http.test.ts.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { expectData, expectError } from './support/contract.js';
import { newTenant } from './support/db.js';
import { createQueue } from './support/dispatch-fixture.js';
import { createClient, OrbitApiError } from '../worker-sdk/index.js';
import { createSchedule, getSchedule, newSchedule, scheduleCommand, scheduleName, versionBody } from './support/schedules.js';

const f = useGatewayFixture();
const api = () => ({ url: f.gw.url, token: f.t.token });
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('versions, pause, resume, retire', () => {
  it('publishes version n+1 with expected_revision; versions never change', async () => {
    const { schedule, version } = await newSchedule(api(), f.t.queue_id);
    const body = { expected_revision: schedule.revision, version: versionBody(f.t.queue_id, { calendar: { cron: '*/5 * * * *' }, overlap: 'skip' }) };
    const key = ikey();
    const data = expectData(await scheduleCommand(api(), schedule.id, 'versions', body, key), 201);
    expect(data.schedule).toMatchObject({ revision: '2', current_version: 2 });
    expect(data.version).toMatchObject({ number: 2, calendar: { cron: '*/5 * * * *', timezone: 'UTC' }, overlap: 'skip' });
    expect(new Date(data.schedule.next_fire_at).getUTCMinutes() % 5).toBe(0);
    expect(expectData(await scheduleCommand(api(), schedule.id, 'versions', body, key), 200)).toEqual({ ...data, deduplicated: true });
    const stale = expectError(await scheduleCommand(api(), schedule.id, 'versions', body), 409, 'STATE_CONFLICT');
    expect(stale.details?.field).toBe('expected_revision');
    expectError(await scheduleCommand(api(), schedule.id, 'versions', { expected_revision: 2, version: body.version }), 400, 'INVALID_ARGUMENT');
    const bad = expectError(
      await scheduleCommand(api(), schedule.id, 'versions', { expected_revision: '2', version: versionBody(f.t.queue_id, { calendar: { cron: 'nope' } }) }),
      400,
      'INVALID_ARGUMENT',
    );
    expect(bad.details?.field).toBe('version.calendar.cron');
    const list = expectData(await call(f.gw.url, 'GET', `/v1/schedules/${schedule.id}/versions`, { token: f.t.token }), 200).versions;
    expect(list).toEqual([version, data.version]);
    expect(expectData(await call(f.gw.url, 'GET', `/v1/schedules/${schedule.id}/versions/1`, { token: f.t.token }), 200).version).toEqual(version);
    for (const n of ['3', '0', 'x', '01'])
      expectError(await call(f.gw.url, 'GET', `/v1/schedules/${schedule.id}/versions/${n}`, { token: f.t.token }), 404, 'NOT_FOUND');
  });

  it('pause clears the next fire; resume computes it from now; every change bumps the revision', async () => {
    const { schedule } = await newSchedule(api(), f.t.queue_id, { calendar: { every_seconds: 30 } });
    const p = expectData(await scheduleCommand(api(), schedule.id, 'pause', { expected_revision: '1' }), 200);
    expect(Object.keys(p).sort()).toEqual(['deduplicated', 'schedule']);
    expect(p.schedule).toMatchObject({ paused: true, next_fire_at: null, revision: '2' });
    expectError(await scheduleCommand(api(), schedule.id, 'resume', { expected_revision: '1' }), 409, 'STATE_CONFLICT');
    const before = Date.now();
    const r = expectData(await scheduleCommand(api(), schedule.id, 'resume', { expected_revision: '2' }), 200).schedule;
    expect(r).toMatchObject({ paused: false, revision: '3' });
    expect(Date.parse(r.next_fire_at)).toBeGreaterThan(before - 1000);
    expect(Date.parse(r.next_fire_at)).toBeLessThanOrEqual(Date.now() + 30_000 + 1000);
    expectError(await scheduleCommand(api(), schedule.id, 'pause', {}), 400, 'INVALID_ARGUMENT');
    expectError(
      await call(f.gw.url, 'POST', `/v1/schedules/${schedule.id}:pause?x=1`, { token: f.t.token, key: ikey(), body: { expected_revision: '3' } }),
      400,
      'INVALID_ARGUMENT',
    );
    expectError(
      await call(f.gw.url, 'POST', `/v1/schedules/${schedule.id}:pause`, { token: f.t.token, body: { expected_revision: '3' } }),
      400,
      'INVALID_ARGUMENT',
    );
  });

  it('retire only when paused; afterwards every command is 409 RESOURCE_RETIRED and history stays', async () => {
    const { schedule } = await newSchedule(api(), f.t.queue_id);
    const e = expectError(await scheduleCommand(api(), schedule.id, 'retire', { expected_revision: '1', reason: 'old' }), 409, 'STATE_CONFLICT');
    expect(e.message).toMatch(/paused/);
    expectData(await scheduleCommand(api(), schedule.id, 'pause', { expected_revision: '1' }), 200);
    expectError(await scheduleCommand(api(), schedule.id, 'retire', { expected_revision: '2', reason: '' }), 400, 'INVALID_ARGUMENT');
    const key = ikey();
    const retired = expectData(await scheduleCommand(api(), schedule.id, 'retire', { expected_revision: '2', reason: 'replaced' }, key), 200).schedule;
    expect(retired).toMatchObject({ paused: true, revision: '3', next_fire_at: null });
    expect(retired.retired_at).toMatch(ISO_MS);
    expect(expectData(await scheduleCommand(api(), schedule.id, 'retire', { expected_revision: '2', reason: 'replaced' }, key), 200).deduplicated).toBe(true);
    for (const [action, body] of [
      ['resume', { expected_revision: '3' }],
      ['pause', { expected_revision: '3' }],
      ['retire', { expected_revision: '3', reason: 'again' }],
      ['trigger', {}],
      ['versions', { expected_revision: '3', version: versionBody(f.t.queue_id) }],
    ] as const) {
      expectError(await scheduleCommand(api(), schedule.id, action, body), 409, 'RESOURCE_RETIRED');
    }
    expect(await getSchedule(api(), schedule.id)).toEqual(retired);
    expect(expectData(await call(f.gw.url, 'GET', `/v1/schedules/${schedule.id}/versions`, { token: f.t.token }), 200).versions).toHaveLength(1);
  });
});

describe('POST /v1/schedules/{id}:trigger', () => {
  it('creates one task from the current version (paused too), with the schedule fields and the exact key', async () => {
    const key = 'tenant/{{id}}/ключ';
    const { schedule } = await newSchedule(api(), f.t.queue_id, {}, { concurrency_key: key, business_key: 'nightly', priority: 4 }, true);
    const k = ikey();
    const data = expectData(await scheduleCommand(api(), schedule.id, 'trigger', { scheduled_for: '2026-05-01T00:00:00+02:00' }, k), 201);
    expect(Object.keys(data).sort()).toEqual(['deduplicated', 'task']);
    const t = data.task;
    expect(t).toMatchObject({
      queue_id: f.t.queue_id,
      handler: 'report.build',
      concurrency_key: key,
      business_key: 'nightly',
      priority: 4,
      max_attempts: 3,
      state: 'WAITING',
    });
    expect(t).toMatchObject({ schedule_id: schedule.id, schedule_version: 1, scheduled_for: '2026-04-30T22:00:00.000Z' });
    const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT HEX(concurrency_key) AS k FROM tasks WHERE id = ?', [t.id]);
    expect(rows[0]!.k).toBe(Buffer.from(key, 'utf8').toString('hex').toUpperCase());
    expect(expectData(await call(f.gw.url, 'GET', `/v1/tasks/${t.id}`, { token: f.t.token }), 200).task).toEqual(t);
    // The Idempotency-Key dedupes it.
    expect(expectData(await scheduleCommand(api(), schedule.id, 'trigger', { scheduled_for: '2026-04-30T22:00:00Z' }, k), 200)).toEqual({
      ...data,
      deduplicated: true,
    });
    const [n] = await f.db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM tasks WHERE schedule_id = ?', [schedule.id]);
    expect(Number(n[0]!.n)).toBe(1);
    // Without scheduled_for: now. Submitted tasks carry no schedule fields.
    const now = expectData(await scheduleCommand(api(), schedule.id, 'trigger', {}), 201).task;
    expect(Math.abs(Date.parse(now.scheduled_for) - Date.now())).toBeLessThan(5000);
    const submitted = expectData(
      await call(f.gw.url, 'POST', '/v1/tasks', {
        token: f.t.token,
        key: ikey(),
        body: { queue_id: f.t.queue_id, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: {} },
      }),
      201,
    ).task;
    expect(Object.keys(submitted)).not.toContain('schedule_id');
    expectError(await scheduleCommand(api(), schedule.id, 'trigger', { scheduled_for: 'yesterday' }), 400, 'INVALID_ARGUMENT');
    expectError(await scheduleCommand(api(), schedule.id, 'trigger', { at: 1 }), 400, 'INVALID_ARGUMENT');
  });

  it('the unfinished-task quota applies: 429 and nothing created', async () => {
    const t = await newTenant(f.db);
    const a = { url: f.gw.url, token: t.token };
    const { schedule } = await newSchedule(a, t.queue_id, {}, {}, true);
    await f.db.pool.query('UPDATE applications SET max_unfinished_tasks = 0 WHERE id = ?', [t.application_id]);
    expectError(await scheduleCommand(a, schedule.id, 'trigger', {}), 429, 'QUOTA_EXCEEDED');
    const [n] = await f.db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM tasks WHERE schedule_id = ?', [schedule.id]);
    expect(Number(n[0]!.n)).toBe(0);
  });
});

describe('queue retirement and schedules', () => {
  it('RESOURCE_BUSY names the enabled schedules; paused ones do not block; retired queue → 409 RESOURCE_RETIRED for create, publish, resume, trigger', async () => {
    const queue = await createQueue(f, { name: 'sched-target' });
    const a = await newSchedule(api(), queue.id);
    const b = await newSchedule(api(), queue.id);
    const retire = (rev: string) =>
      call(f.gw.url, 'POST', `/v1/queues/${queue.id}:retire`, { token: f.t.token, key: ikey(), body: { expected_revision: rev, reason: 'gone' } });
    const busy = expectError(await retire(queue.revision), 409, 'RESOURCE_BUSY');
    expect(busy.details?.reasons).toEqual(['schedules']);
    expect(busy.message).toContain(a.schedule.id);
    expect(busy.message).toContain(b.schedule.id);
    expect((busy.details?.blockers as any[])[0].schedule_ids.sort()).toEqual([a.schedule.id, b.schedule.id].sort());
    for (const s of [a, b]) expectData(await scheduleCommand(api(), s.schedule.id, 'pause', { expected_revision: '1' }), 200);
    expectData(await retire(queue.revision), 200);
    expectError(await scheduleCommand(api(), a.schedule.id, 'resume', { expected_revision: '2' }), 409, 'RESOURCE_RETIRED');
    expectError(await scheduleCommand(api(), a.schedule.id, 'trigger', {}), 409, 'RESOURCE_RETIRED');
    expectError(await createSchedule(api(), { name: scheduleName(), paused: true, version: versionBody(queue.id) }), 409, 'RESOURCE_RETIRED');
    const other = await newSchedule(api(), f.t.queue_id);
    expectError(
      await scheduleCommand(api(), other.schedule.id, 'versions', { expected_revision: '1', version: versionBody(queue.id) }),
      409,
      'RESOURCE_RETIRED',
    );
    // Moving the paused schedule to a live queue by a new version makes it resumable again.
    expectData(await scheduleCommand(api(), a.schedule.id, 'versions', { expected_revision: '2', version: versionBody(f.t.queue_id) }), 201);
    expectData(await scheduleCommand(api(), a.schedule.id, 'resume', { expected_revision: '3' }), 200);
  });
});

describe('reads', () => {
  it('lists by name with a cursor; fires is empty before any fire; malformed ids are 404', async () => {
    const t = await newTenant(f.db);
    const a = { url: f.gw.url, token: t.token };
    const made = [];
    for (let i = 0; i < 5; i++) made.push((await newSchedule(a, t.queue_id, {}, {}, true)).schedule);
    const p1 = expectData(await call(f.gw.url, 'GET', '/v1/schedules?limit=3', { token: t.token }), 200);
    expect(p1.schedules.map((s: any) => s.name)).toEqual(
      made
        .map((s) => s.name)
        .sort()
        .slice(0, 3),
    );
    const p2 = expectData(await call(f.gw.url, 'GET', `/v1/schedules?limit=3&cursor=${p1.next_cursor}`, { token: t.token }), 200);
    expect(p2.schedules.map((s: any) => s.name)).toEqual(
      made
        .map((s) => s.name)
        .sort()
        .slice(3),
    );
    expect(p2.next_cursor).toBeNull();
    expectError(await call(f.gw.url, 'GET', '/v1/schedules?limit=0', { token: t.token }), 400, 'INVALID_ARGUMENT');
    expectError(await call(f.gw.url, 'GET', '/v1/schedules?cursor=zzz', { token: t.token }), 400, 'INVALID_ARGUMENT');
    expectError(await call(f.gw.url, 'GET', '/v1/schedules?queue_id=x', { token: t.token }), 400, 'INVALID_ARGUMENT');
    expect(expectData(await call(f.gw.url, 'GET', `/v1/schedules/${made[0].id}/fires`, { token: t.token }), 200)).toEqual({ fires: [], next_cursor: null });
    expectError(await call(f.gw.url, 'GET', `/v1/schedules/${made[0].id}/fires?cursor=abc`, { token: t.token }), 400, 'INVALID_ARGUMENT');
    for (const path of ['/v1/schedules/NOPE', '/v1/schedules/' + '0'.repeat(32), '/v1/schedules/' + '0'.repeat(32) + '/fires']) {
      expectError(await call(f.gw.url, 'GET', path, { token: t.token }), 404, 'NOT_FOUND');
    }
    expectError(await scheduleCommand(a, 'ABC', 'pause', { expected_revision: '1' }), 404, 'NOT_FOUND');
  });
});

describe('SDK client', () => {
  it('has a typed method for every endpoint', async () => {
    const c = createClient({ url: f.gw.url, token: f.t.token });
    const k = () => ({ idempotencyKey: ikey('sdk') });
    const version = {
      calendar: { cron: '0 3 * * *', timezone: 'Europe/Berlin' },
      task: { queue_id: f.t.queue_id, handler: 'index.rebuild', handler_version: 'v1', payload_version: 'v1', payload: {} },
    };
    const created = await c.createSchedule({ name: scheduleName('sdk'), version }, k());
    expect(created.deduplicated).toBe(false);
    const id = created.schedule.id;
    expect(await c.getSchedule(id)).toEqual(created.schedule);
    expect((await c.listSchedules({ limit: 500 })).schedules.map((s) => s.id)).toContain(id);
    const v2 = await c.publishScheduleVersion(id, { expected_revision: 1n, version: { ...version, calendar: { every_seconds: 3600 } } }, k());
    expect(v2.version).toMatchObject({ number: 2, calendar: { every_seconds: 3600 } });
    expect((await c.listScheduleVersions(id)).map((v) => v.number)).toEqual([1, 2]);
    expect((await c.getScheduleVersion(id, 1)).calendar).toEqual(version.calendar);
    const paused = await c.pauseSchedule(id, { expected_revision: v2.schedule.revision }, k());
    expect(paused.schedule.paused).toBe(true);
    const resumed = await c.resumeSchedule(id, { expected_revision: paused.schedule.revision }, k());
    expect(resumed.schedule.paused).toBe(false);
    const triggered = await c.triggerSchedule(id, {}, k());
    expect(triggered.task).toMatchObject({ schedule_id: id, schedule_version: 2 });
    expect(await c.listScheduleFires(id)).toEqual({ fires: [], next_cursor: null });
    const err = await c.retireSchedule(id, { expected_revision: resumed.schedule.revision, reason: 'x' }, k()).catch((e) => e);
    expect(err).toBeInstanceOf(OrbitApiError);
    expect(err.code).toBe('STATE_CONFLICT');
    const again = await c.pauseSchedule(id, { expected_revision: resumed.schedule.revision }, k());
    const retired = await c.retireSchedule(id, { expected_revision: again.schedule.revision, reason: 'replaced' }, k());
    expect(retired.schedule.retired_at).toBeDefined();
  });
});
