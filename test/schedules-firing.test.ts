// Firing (docs/schedules.md "Firing exactly once"): one task per fire time on time, catch-up none/latest/all with
// catchup_limit and overlap skip after every gateway was stopped across several fire times (the
// fire times are moved into the past in SQL instead of waiting for them), quota failures recorded
// and not retried, paused periods never caught up, new versions used from their commit.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { useGatewayFixture } from './support/fixture.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { call, ikey } from './support/http.js';
import { newTenant } from './support/db.js';
import { backdate, dbNow, fireRecords, getSchedule, newSchedule, scheduleCommand, scheduleTasks, versionBody, type Api } from './support/schedules.js';
import { waitFor } from './support/wait.js';

const f = useGatewayFixture();
let gw: GatewayProcess | undefined;
const url = () => (gw ?? f.gw).url;
const api = (token = f.t.token): Api => ({ url: url(), token });

/** Stops every gateway, runs `change` (SQL while nothing fires), starts one gateway again. */
async function whileStopped(change: () => Promise<void>): Promise<void> {
  await (gw ?? f.gw).stop();
  await change();
  gw = await startGateway(f.db.dsn);
}

/** Waits until the schedule's next fire is in the future (its due times are settled). */
async function settled(scheduleId: string, ms = 10_000): Promise<void> {
  await waitFor(
    `schedule ${scheduleId} settled`,
    async () => {
      const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT next_fire_at > UTC_TIMESTAMP(3) AS ok FROM schedules WHERE id = ?', [scheduleId]);
      return Number(rows[0]!.ok) === 1;
    },
    ms,
  );
}

const outcomes = async (id: string) => (await fireRecords(f.db.pool, id)).map((r) => r.outcome);

describe('on time', () => {
  it("every_seconds: 1 creates exactly one task per fire time, never before it and in fire order, with the version's exact key", async () => {
    const key = 'report/{{date}}';
    const { schedule } = await newSchedule(api(), f.t.queue_id, { calendar: { every_seconds: 1 } }, { concurrency_key: key });
    const recs = await waitFor(
      '6 fires',
      async () => {
        const r = await fireRecords(f.db.pool, schedule.id);
        return r.length >= 6 ? r : null;
      },
      15_000,
    );
    expectData200(await scheduleCommand(api(), schedule.id, 'pause', { expected_revision: '1' }));
    const all = await fireRecords(f.db.pool, schedule.id);
    expect(all.every((r) => r.outcome === 'created')).toBe(true);
    for (let i = 1; i < all.length; i++) expect(all[i]!.scheduled_for - all[i - 1]!.scheduled_for).toBe(1000);
    const tasks = await scheduleTasks(f.db.pool, schedule.id);
    expect(tasks.map((t) => t.scheduled_for)).toEqual(all.map((r) => r.scheduled_for));
    expect(new Set(tasks.map((t) => t.id))).toEqual(new Set(all.map((r) => r.task_id)));
    // On the database clock: no task commits before its fire time, and the tasks commit in the
    // order of their fire times. (The lag itself is a figure of `npm run bench`, scheduled-load.)
    for (const [i, t] of tasks.entries()) {
      expect(t.created_at).toBeGreaterThanOrEqual(t.scheduled_for);
      if (i > 0) expect(t.created_at).toBeGreaterThanOrEqual(tasks[i - 1]!.created_at);
    }
    const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT DISTINCT HEX(concurrency_key) AS k, schedule_version FROM tasks WHERE schedule_id = ?', [
      schedule.id,
    ]);
    expect(rows.map((r) => [r.k, Number(r.schedule_version)])).toEqual([[Buffer.from(key).toString('hex').toUpperCase(), 1]]);
    // History through the API, newest first, paged.
    const page = (await call(url(), 'GET', `/v1/schedules/${schedule.id}/fires?limit=2`, { token: f.t.token })).body.data;
    expect(page.fires.map((x: any) => Date.parse(x.scheduled_for))).toEqual([all[all.length - 1]!.scheduled_for, all[all.length - 2]!.scheduled_for]);
    expect(page.fires[0]).toMatchObject({ version: 1, outcome: 'created', task_id: all[all.length - 1]!.task_id });
    const next = (await call(url(), 'GET', `/v1/schedules/${schedule.id}/fires?limit=2&cursor=${page.next_cursor}`, { token: f.t.token })).body.data;
    expect(Date.parse(next.fires[0].scheduled_for)).toBe(all[all.length - 3]!.scheduled_for);
    const s = await getSchedule(api(), schedule.id);
    expect(Date.parse(s.last_fire_at!)).toBe(all[all.length - 1]!.scheduled_for);
    const metrics = (await call(url(), 'GET', '/metrics')).text;
    expect(metrics).toMatch(/orbit_schedule_fires_total\{outcome="created"\} [1-9]/);
    expect(metrics).toMatch(/orbit_schedule_lag_seconds_count [1-9]/);
    expect(recs.length).toBeGreaterThanOrEqual(6);
  });

  it('a new version is used by the fires after its commit', async () => {
    const { schedule } = await newSchedule(api(), f.t.queue_id, { calendar: { every_seconds: 1 } }, { payload: { v: 1 } });
    await waitFor('a fire of version 1', async () => (await fireRecords(f.db.pool, schedule.id)).length >= 1, 5000);
    const pub = await scheduleCommand(api(), schedule.id, 'versions', {
      expected_revision: '1',
      version: versionBody(f.t.queue_id, { calendar: { every_seconds: 1 } }, { payload: { v: 2 } }),
    });
    expect(pub.status).toBe(201);
    const publishedAt = Date.parse(pub.body.data.version.created_at);
    await waitFor(
      'two fires of version 2',
      async () => {
        const [r] = await f.db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM tasks WHERE schedule_id = ? AND schedule_version = 2', [schedule.id]);
        return Number(r[0]!.n) >= 2;
      },
      6000,
    );
    expectData200(await scheduleCommand(api(), schedule.id, 'pause', { expected_revision: '2' }));
    const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT schedule_version AS v, payload, scheduled_for FROM tasks WHERE schedule_id = ?', [
      schedule.id,
    ]);
    for (const r of rows) {
      const at = Date.parse(String(r.scheduled_for).replace(' ', 'T') + 'Z');
      expect(Number(r.v)).toBe(at > publishedAt ? 2 : 1);
      expect(JSON.parse(r.payload)).toEqual({ v: Number(r.v) });
    }
  });

  it('a fire at the unfinished-task quota is recorded failed_quota and not retried', async () => {
    const t = await newTenant(f.db);
    await f.db.pool.query('UPDATE applications SET max_unfinished_tasks = 0 WHERE id = ?', [t.application_id]);
    const { schedule } = await newSchedule(api(t.token), t.queue_id, { calendar: { every_seconds: 1 } });
    await waitFor('two failed fires', async () => (await outcomes(schedule.id)).filter((o) => o === 'failed_quota').length >= 2, 6000);
    await f.db.pool.query('UPDATE applications SET max_unfinished_tasks = 100 WHERE id = ?', [t.application_id]);
    await waitFor('a created fire', async () => (await outcomes(schedule.id)).includes('created'), 6000);
    expectData200(await scheduleCommand(api(t.token), schedule.id, 'pause', { expected_revision: '1' }));
    const recs = await fireRecords(f.db.pool, schedule.id);
    const failed = recs.filter((r) => r.outcome === 'failed_quota');
    expect(failed.every((r) => r.task_id === null)).toBe(true);
    // Not retried: no task for a failed fire time, one task per created one.
    const tasks = await scheduleTasks(f.db.pool, schedule.id);
    expect(tasks.map((x) => x.scheduled_for)).toEqual(recs.filter((r) => r.outcome === 'created').map((r) => r.scheduled_for));
    const [a] = await f.db.pool.query<RowDataPacket[]>('SELECT unfinished_tasks FROM applications WHERE id = ?', [t.application_id]);
    expect(Number(a[0]!.unfinished_tasks)).toBe(tasks.length);
  });

  it('overlap skip: fires are skipped while the previous task is unfinished, and create again once it finished', async () => {
    const { schedule } = await newSchedule(api(), f.t.queue_id, { calendar: { every_seconds: 1 }, overlap: 'skip' });
    await waitFor('two skipped fires', async () => (await outcomes(schedule.id)).filter((o) => o === 'skipped_overlap').length >= 2, 6000);
    const [first] = await scheduleTasks(f.db.pool, schedule.id);
    expect((await call(url(), 'POST', `/v1/tasks/${first!.id}:cancel`, { token: f.t.token, key: ikey(), body: {} })).status).toBe(200);
    await waitFor('a second task', async () => (await scheduleTasks(f.db.pool, schedule.id)).length === 2, 6000);
    expectData200(await scheduleCommand(api(), schedule.id, 'pause', { expected_revision: '1' }));
    const o = await outcomes(schedule.id);
    expect(o[0]).toBe('created');
    expect(o.filter((x) => x === 'created')).toHaveLength(2);
    expect(o.slice(1, o.lastIndexOf('created')).every((x) => x === 'skipped_overlap')).toBe(true);
  });
});

describe('every gateway stopped across several fire times, then one started', () => {
  it('catchup none / latest / all (limit) and overlap skip decide each missed fire time, exactly one record each', async () => {
    const P = 60_000;
    const mk = (over: Record<string, unknown>) =>
      newSchedule(api(), f.t.queue_id, { calendar: { every_seconds: 60 }, ...over }).then((d) => d.schedule.id as string);
    const none = await mk({ catchup: 'none' });
    const latest = await mk({});
    const all = await mk({ catchup: 'all', catchup_limit: 3 });
    const allSkip = await mk({ catchup: 'all', overlap: 'skip' });
    const busy = await mk({ catchup: 'all', overlap: 'skip' });
    // `busy` has an unfinished task from before the outage.
    expect((await scheduleCommand(api(), busy, 'trigger', {})).status).toBe(201);
    const times = new Map<string, number[]>();
    await whileStopped(async () => {
      for (const id of [none, latest, all, allSkip, busy]) times.set(id, await backdate(f.db.pool, id, P, 5));
    });
    for (const id of times.keys()) await settled(id);
    const expectRecords = async (id: string, expected: string[]) => {
      const recs = await fireRecords(f.db.pool, id);
      expect(recs.map((r) => r.scheduled_for)).toEqual(times.get(id));
      expect(recs.map((r) => r.outcome)).toEqual(expected);
      const tasks = await scheduleTasks(f.db.pool, id);
      const created = recs.filter((r) => r.outcome === 'created');
      expect(tasks.filter((t) => created.some((c) => c.task_id === t.id)).map((t) => t.scheduled_for)).toEqual(created.map((c) => c.scheduled_for));
      // Next fire: the grid continues after the missed times.
      const s = await getSchedule(api(), id);
      expect(Date.parse(s.next_fire_at!)).toBe(times.get(id)![4]! + P);
    };
    const SC = 'skipped_catchup';
    const SO = 'skipped_overlap';
    await expectRecords(none, [SC, SC, SC, SC, SC]);
    await expectRecords(latest, [SC, SC, SC, SC, 'created']);
    await expectRecords(all, ['created', 'created', 'created', SC, SC]);
    await expectRecords(allSkip, ['created', SO, SO, SO, SO]);
    await expectRecords(busy, [SO, SO, SO, SO, SO]);
  });

  it('a long catch-up is settled in chunks; catchup_limit holds across them', async () => {
    const mk = (over: Record<string, unknown>) =>
      newSchedule(api(), f.t.queue_id, { calendar: { every_seconds: 1 }, ...over }).then((d) => d.schedule.id as string);
    const all = await mk({ catchup: 'all', catchup_limit: 10 });
    const latest = await mk({ catchup: 'latest' });
    const missed = new Map<string, number[]>();
    await whileStopped(async () => {
      // 2 500 fire times behind: three transactions of at most 1 000.
      for (const id of [all, latest]) missed.set(id, await backdate(f.db.pool, id, 1000, 2500));
    });
    for (const id of [all, latest]) await settled(id, 20_000);
    for (const id of [all, latest]) await scheduleCommand(api(), id, 'pause', { expected_revision: '1' });
    const now = await dbNow(f.db.pool);
    for (const [id, firstCreated] of [
      [all, 10],
      [latest, 1],
    ] as const) {
      const recs = await fireRecords(f.db.pool, id);
      // The missed times (and, for the fast schedule, the few that came due since): one record each.
      expect(recs.slice(0, 2500).map((r) => r.scheduled_for)).toEqual(missed.get(id));
      for (let i = 1; i < recs.length; i++) expect(recs[i]!.scheduled_for - recs[i - 1]!.scheduled_for).toBe(1000);
      expect(recs[recs.length - 1]!.scheduled_for).toBeLessThanOrEqual(now);
      // (latest: the newest missed time may be the last of the 2 500 when the catch-up ran before
      // the next one came due.)
      const created = recs.slice(0, 2499).filter((r) => r.outcome === 'created').length;
      if (id === all) expect(recs.slice(0, firstCreated).every((r) => r.outcome === 'created')).toBe(true);
      expect(created).toBe(id === all ? 10 : 0);
    }
    // latest: exactly one task for the catch-up, for its newest due time (then fires on time).
    const lrecs = await fireRecords(f.db.pool, latest);
    const firstCreated = lrecs.findIndex((r) => r.outcome === 'created');
    expect(lrecs.slice(0, firstCreated).every((r) => r.outcome === 'skipped_catchup')).toBe(true);
    expect(lrecs.slice(firstCreated).every((r) => r.outcome === 'created')).toBe(true);
    expect(firstCreated).toBeGreaterThanOrEqual(2499);
  });

  it('a paused period is never caught up: resume fires from now on', async () => {
    const { schedule } = await newSchedule(api(), f.t.queue_id, { calendar: { every_seconds: 60 } });
    expectData200(await scheduleCommand(api(), schedule.id, 'pause', { expected_revision: '1' }));
    await whileStopped(async () => {
      await f.db.pool.query('UPDATE schedule_versions SET anchor_at = anchor_at - INTERVAL 30 MINUTE WHERE schedule_id = ?', [schedule.id]);
    });
    const r = await scheduleCommand(api(), schedule.id, 'resume', { expected_revision: '2' });
    expect(r.status).toBe(200);
    const next = Date.parse(r.body.data.schedule.next_fire_at);
    const now = await dbNow(f.db.pool);
    expect(next).toBeGreaterThan(now);
    expect(next - now).toBeLessThanOrEqual(60_000);
    await new Promise((res) => setTimeout(res, 700)); // absence: no catch-up fire after the resume
    expect(await fireRecords(f.db.pool, schedule.id)).toEqual([]);
  });
});

function expectData200(r: { status: number; text: string }): void {
  if (r.status !== 200) throw new Error(`expected 200, got ${r.status}: ${r.text}`);
}
