// Contract of /v1/schedules (schedules.md) with raw HTTP: create, versions, pause/resume, trigger,
// retire, reads, every field validated with its code and field, nothing half-created, idempotency.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { expectData, expectError, expectHexId, limitedCredential } from './support/contract.js';
import { newTenant } from './support/db.js';
import { createQueue } from './support/dispatch-fixture.js';
import { createClient, OrbitApiError } from '../worker-sdk/index.js';
import { createSchedule, getSchedule, newSchedule, scheduleCommand, scheduleName, versionBody } from './support/schedules.js';

const f = useGatewayFixture();
const api = () => ({ url: f.gw.url, token: f.t.token });
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function count(table: string): Promise<number> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM ${table}`);
  return Number(rows[0]!.n);
}

describe('POST /v1/schedules', () => {
  it('creates: 201 {schedule, version, deduplicated}; the version shows every default', async () => {
    const name = scheduleName();
    const body = {
      name,
      version: versionBody(f.t.queue_id, { calendar: { cron: '0 3 * * *', timezone: 'Europe/Berlin' } }, { concurrency_key: 'index/main' }),
    };
    const key = ikey();
    const data = expectData(await createSchedule(api(), body, key), 201);
    expect(Object.keys(data).sort()).toEqual(['deduplicated', 'schedule', 'version']);
    const s = data.schedule;
    expectHexId(s.id);
    expect(Object.keys(s).sort()).toEqual([
      'created_at',
      'current_version',
      'id',
      'last_fire_at',
      'name',
      'namespace_id',
      'next_fire_at',
      'paused',
      'revision',
      'updated_at',
    ]);
    expect(s).toMatchObject({ namespace_id: f.t.namespace_id, name, revision: '1', paused: false, current_version: 1, last_fire_at: null });
    expect(s.next_fire_at).toMatch(ISO_MS);
    // 03:00 in Berlin is 01:00 or 02:00 UTC.
    expect(new Date(s.next_fire_at).getUTCHours()).toBeGreaterThanOrEqual(1);
    expect(new Date(s.next_fire_at).getUTCHours()).toBeLessThanOrEqual(2);
    expect(data.version).toEqual({
      number: 1,
      created_at: data.version.created_at,
      calendar: { cron: '0 3 * * *', timezone: 'Europe/Berlin' },
      task: {
        queue_id: f.t.queue_id,
        handler: 'report.build',
        handler_version: 'v1',
        payload_version: 'v1',
        payload: { scope: 'all' },
        concurrency_key: 'index/main',
        priority: 0,
        max_attempts: 3,
        deadline_seconds: 86400,
      },
      overlap: 'allow',
      catchup: 'latest',
      catchup_limit: 100,
      starts_at: null,
      ends_at: null,
    });
    // Replay: the frozen receipt; with the defaults written out it is the same command.
    const withDefaults = {
      ...body,
      paused: false,
      version: { ...body.version, overlap: 'allow', catchup: 'latest', catchup_limit: 100, starts_at: null, ends_at: null, task: { ...data.version.task } },
    };
    const again = expectData(await createSchedule(api(), withDefaults, key), 200);
    expect(again).toEqual({ ...data, deduplicated: true });
    expectError(await createSchedule(api(), { ...body, paused: true }, key), 409, 'IDEMPOTENCY_CONFLICT');
    expect(await getSchedule(api(), s.id)).toEqual(s);
  });

  it('every_seconds: the first fire is one period after the publication; paused: no next fire', async () => {
    const { schedule, version } = await newSchedule(api(), f.t.queue_id, { calendar: { every_seconds: 600 } });
    expect(Date.parse(schedule.next_fire_at) - Date.parse(version.created_at)).toBe(600_000);
    const paused = await newSchedule(api(), f.t.queue_id, {}, {}, true);
    expect(paused.schedule).toMatchObject({ paused: true, next_fire_at: null });
  });

  it('starts_at anchors every_seconds; ends_at in the past leaves no next fire', async () => {
    const starts = new Date(Date.now() + 86_400_000).toISOString();
    const a = await newSchedule(api(), f.t.queue_id, { calendar: { every_seconds: 60 }, starts_at: starts });
    expect(a.schedule.next_fire_at).toBe(new Date(Date.parse(starts) + 60_000).toISOString());
    const b = await newSchedule(api(), f.t.queue_id, { starts_at: '2020-01-01T00:00:00Z', ends_at: '2020-01-02T00:00:00Z' });
    expect(b.schedule.next_fire_at).toBeNull();
    expect(b.version.starts_at).toBe('2020-01-01T00:00:00.000Z');
  });

  // Each refusal: status, code, the field it names; nothing is created.
  const q = () => f.t.queue_id;
  const BAD: [string, () => unknown, number, string, string | undefined][] = [
    ['name too long', () => ({ name: 'x'.repeat(65), version: versionBody(q()) }), 400, 'INVALID_ARGUMENT', 'name'],
    ['name with capitals', () => ({ name: 'Nightly', version: versionBody(q()) }), 400, 'INVALID_ARGUMENT', 'name'],
    ['unknown field', () => ({ name: scheduleName(), version: versionBody(q()), extra: 1 }), 400, 'INVALID_ARGUMENT', undefined],
    ['no version', () => ({ name: scheduleName() }), 400, 'INVALID_ARGUMENT', undefined],
    ['paused not boolean', () => ({ name: scheduleName(), paused: 'no', version: versionBody(q()) }), 400, 'INVALID_ARGUMENT', 'paused'],
    [
      'cron and every_seconds',
      () => ({ name: scheduleName(), version: versionBody(q(), { calendar: { cron: '* * * * *', every_seconds: 5 } }) }),
      400,
      'INVALID_ARGUMENT',
      'version.calendar',
    ],
    ['empty calendar', () => ({ name: scheduleName(), version: versionBody(q(), { calendar: {} }) }), 400, 'INVALID_ARGUMENT', 'version.calendar'],
    [
      'invalid cron',
      () => ({ name: scheduleName(), version: versionBody(q(), { calendar: { cron: '61 * * * *' } }) }),
      400,
      'INVALID_ARGUMENT',
      'version.calendar.cron',
    ],
    [
      'six-field cron',
      () => ({ name: scheduleName(), version: versionBody(q(), { calendar: { cron: '0 * * * * *' } }) }),
      400,
      'INVALID_ARGUMENT',
      'version.calendar.cron',
    ],
    [
      'cron that never fires',
      () => ({ name: scheduleName(), version: versionBody(q(), { calendar: { cron: '0 0 30 2 *' } }) }),
      400,
      'INVALID_ARGUMENT',
      'version.calendar.cron',
    ],
    [
      'unknown zone',
      () => ({ name: scheduleName(), version: versionBody(q(), { calendar: { cron: '0 3 * * *', timezone: 'Europe/Atlantis' } }) }),
      400,
      'INVALID_ARGUMENT',
      'version.calendar.timezone',
    ],
    [
      'zone with every_seconds',
      () => ({ name: scheduleName(), version: versionBody(q(), { calendar: { every_seconds: 5, timezone: 'UTC' } }) }),
      400,
      'INVALID_ARGUMENT',
      'version.calendar.timezone',
    ],
    [
      'every_seconds 0',
      () => ({ name: scheduleName(), version: versionBody(q(), { calendar: { every_seconds: 0 } }) }),
      400,
      'INVALID_ARGUMENT',
      'version.calendar.every_seconds',
    ],
    [
      'every_seconds over a year',
      () => ({ name: scheduleName(), version: versionBody(q(), { calendar: { every_seconds: 31_536_001 } }) }),
      400,
      'INVALID_ARGUMENT',
      'version.calendar.every_seconds',
    ],
    ['overlap', () => ({ name: scheduleName(), version: versionBody(q(), { overlap: 'queue' }) }), 400, 'INVALID_ARGUMENT', 'version.overlap'],
    ['catchup', () => ({ name: scheduleName(), version: versionBody(q(), { catchup: 'some' }) }), 400, 'INVALID_ARGUMENT', 'version.catchup'],
    ['catchup_limit 0', () => ({ name: scheduleName(), version: versionBody(q(), { catchup_limit: 0 }) }), 400, 'INVALID_ARGUMENT', 'version.catchup_limit'],
    [
      'catchup_limit 1001',
      () => ({ name: scheduleName(), version: versionBody(q(), { catchup_limit: 1001 }) }),
      400,
      'INVALID_ARGUMENT',
      'version.catchup_limit',
    ],
    [
      'starts_at not RFC 3339',
      () => ({ name: scheduleName(), version: versionBody(q(), { starts_at: '2026-13-01T00:00:00Z' }) }),
      400,
      'INVALID_ARGUMENT',
      'version.starts_at',
    ],
    [
      'ends_at before starts_at',
      () => ({ name: scheduleName(), version: versionBody(q(), { starts_at: '2026-01-02T00:00:00Z', ends_at: '2026-01-01T00:00:00Z' }) }),
      400,
      'INVALID_ARGUMENT',
      'version.ends_at',
    ],
    [
      'task.not_before',
      () => ({ name: scheduleName(), version: versionBody(q(), {}, { not_before: '2026-01-01T00:00:00Z' }) }),
      400,
      'INVALID_ARGUMENT',
      'version.task.not_before',
    ],
    [
      'task.handler',
      () => ({ name: scheduleName(), version: versionBody(q(), {}, { handler: 'bad handler' }) }),
      400,
      'INVALID_ARGUMENT',
      'version.task.handler',
    ],
    [
      'task.concurrency_key null',
      () => ({ name: scheduleName(), version: versionBody(q(), {}, { concurrency_key: null }) }),
      400,
      'INVALID_ARGUMENT',
      'version.task.concurrency_key',
    ],
    [
      'task.concurrency_key whitespace',
      () => ({ name: scheduleName(), version: versionBody(q(), {}, { concurrency_key: ' k' }) }),
      400,
      'INVALID_ARGUMENT',
      'version.task.concurrency_key',
    ],
    [
      'task.business_key empty',
      () => ({ name: scheduleName(), version: versionBody(q(), {}, { business_key: '' }) }),
      400,
      'INVALID_ARGUMENT',
      'version.task.business_key',
    ],
    ['task.priority 10', () => ({ name: scheduleName(), version: versionBody(q(), {}, { priority: 10 }) }), 400, 'INVALID_ARGUMENT', 'version.task.priority'],
    [
      'task.payload too large',
      () => ({ name: scheduleName(), version: versionBody(q(), {}, { payload: 'x'.repeat(262_200) }) }),
      413,
      'PAYLOAD_TOO_LARGE',
      'version.task.payload',
    ],
    [
      'task.payload lossy number',
      () => ({ name: scheduleName(), version: versionBody(q(), {}, { payload: { n: 2 ** 60 } }) }),
      400,
      'INVALID_ARGUMENT',
      'version.task.payload.n',
    ],
    ['unknown queue', () => ({ name: scheduleName(), version: versionBody('0'.repeat(32)) }), 404, 'NOT_FOUND', 'version.task.queue_id'],
    ['malformed queue id', () => ({ name: scheduleName(), version: versionBody('nope') }), 404, 'NOT_FOUND', 'version.task.queue_id'],
  ];
  it.each(BAD)('%s: refused with its code and field; nothing created', async (_what, body, status, code, field) => {
    const before = [await count('schedules'), await count('schedule_versions'), await count('receipts')];
    const e = expectError(await createSchedule(api(), body()), status, code);
    if (field !== undefined) expect(e.details?.field).toBe(field);
    expect([await count('schedules'), await count('schedule_versions'), await count('receipts')]).toEqual(before);
  });

  it('refuses a used name (retired included) with 409 STATE_CONFLICT', async () => {
    const { schedule } = await newSchedule(api(), f.t.queue_id, {}, {}, true);
    const e = expectError(await createSchedule(api(), { name: schedule.name, version: versionBody(f.t.queue_id) }), 409, 'STATE_CONFLICT');
    expect(e.details?.field).toBe('name');
    expectData(await scheduleCommand(api(), schedule.id, 'retire', { expected_revision: schedule.revision, reason: 'done' }), 200);
    expectError(await createSchedule(api(), { name: schedule.name, version: versionBody(f.t.queue_id) }), 409, 'STATE_CONFLICT');
  });

  it("authorization: scope schedules:manage for commands, queue_ids for the version's queue; another namespace's queue is 404", async () => {
    const reader = await limitedCredential(f.db, f.t.namespace_id, ['tasks:read']);
    expectError(
      await createSchedule({ url: f.gw.url, token: reader.token }, { name: scheduleName(), version: versionBody(f.t.queue_id) }),
      403,
      'PERMISSION_DENIED',
    );
    const other = await createQueue(f, { name: 'other-queue' });
    const limited = await limitedCredential(f.db, f.t.namespace_id, ['schedules:manage'], [other.id]);
    expectError(
      await createSchedule({ url: f.gw.url, token: limited.token }, { name: scheduleName(), version: versionBody(f.t.queue_id) }),
      403,
      'PERMISSION_DENIED',
    );
    const foreign = await newTenant(f.db);
    expectError(await createSchedule(api(), { name: scheduleName(), version: versionBody(foreign.queue_id) }), 404, 'NOT_FOUND');
    // Reads: tasks:read is enough; a limited credential does not see schedules of other queues.
    const { schedule } = await newSchedule(api(), f.t.queue_id);
    expect(expectData(await call(f.gw.url, 'GET', `/v1/schedules/${schedule.id}`, { token: reader.token }), 200).schedule.id).toBe(schedule.id);
    expectError(await call(f.gw.url, 'GET', `/v1/schedules/${schedule.id}`, { token: limited.token }), 403, 'PERMISSION_DENIED');
    expect(expectData(await call(f.gw.url, 'GET', '/v1/schedules', { token: limited.token }), 200).schedules).toEqual([]);
    expectError(await call(f.gw.url, 'GET', `/v1/schedules/${schedule.id}`, { token: foreign.token }), 404, 'NOT_FOUND');
    const noRead = await limitedCredential(f.db, f.t.namespace_id, ['queues:manage']);
    expectError(await call(f.gw.url, 'GET', '/v1/schedules', { token: noRead.token }), 403, 'PERMISSION_DENIED');
  });

  it('at most 1 000 non-retired schedules per namespace → 429; retiring one frees a slot', async () => {
    const t = await newTenant(f.db);
    const a = { url: f.gw.url, token: t.token };
    const first = await newSchedule(a, t.queue_id, {}, {}, true);
    // 999 more rows straight in SQL (the quota counts rows, however they got there).
    const values = Array.from(
      { length: 999 },
      (_, i) =>
        `(LPAD(HEX(${i + 1}), 32, 'f'), '${t.namespace_id}', '${t.application_id}', 'bulk-${i}', 1, 1, 1, '${t.queue_id}', UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
    );
    await f.db.pool.query(
      `INSERT INTO schedules (id, namespace_id, application_id, name, revision, paused, current_version, queue_id, created_at, updated_at) VALUES ${values.join(',')}`,
    );
    expectError(await createSchedule(a, { name: scheduleName(), version: versionBody(t.queue_id) }), 429, 'QUOTA_EXCEEDED');
    expectData(await scheduleCommand(a, first.schedule.id, 'retire', { expected_revision: first.schedule.revision, reason: 'make room' }), 200);
    expectData(await createSchedule(a, { name: scheduleName(), version: versionBody(t.queue_id) }), 201);
  });
});

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
