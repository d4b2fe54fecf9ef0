// Contract of /v1/schedules (docs/schedules.md) with raw HTTP: create, versions, pause/resume, trigger,
// retire, reads, every field validated with its code and field, nothing half-created, idempotency.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { expectData, expectError, expectHexId, limitedCredential } from './support/contract.js';
import { newTenant } from './support/db.js';
import { createQueue } from './support/dispatch-fixture.js';
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
