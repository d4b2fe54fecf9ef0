// Exactly once per fire time, the hard way: three gateway nodes on one database, two
// every_seconds schedules and two cron schedules (UTC and Europe/Berlin), SDK workers consuming the
// tasks, for about a minute during which gateways are killed with SIGKILL and restarted (one, two,
// then all three at once across several fire times) and the database is killed and restarted. At
// the end every fire time of each schedule's calendar from its first fire to the pause has exactly
// one record; every `created` record has exactly one task (with that fire time) and every skipped
// one none; no task exists without its record. Runs on its own durable server (flush at commit).
import { beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { freePort } from '../server/mariadb/embedded-mariadb.js';
import { compileCalendar } from '../server/schedules/calendar.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { spawnWorker } from './support/workers.js';
import { assertPermitInvariants } from './support/invariants.js';
import { call, ikey } from './support/http.js';
import { fireRecords, scheduleName, versionBody } from './support/schedules.js';
import { sleep } from './support/wait.js';
import { useOwnServer } from './support/own-server.js';

const own = useOwnServer('orbit-sched-chaos-');

const ports: number[] = [];
const gateways: (GatewayProcess | null)[] = [null, null, null];

/** Every process started, for the error lines of a failure. */
const all: GatewayProcess[] = [];
const start = async (i: number) => {
  gateways[i] = await startGateway(own.dsn(), { ORBIT_NODE_ID: `node-${i}-${Date.now()}` }, ports[i]);
  all.push(gateways[i]!);
};
const kill = async (i: number) => {
  await gateways[i]?.kill9();
  gateways[i] = null;
};
const url = (i: number) => `http://127.0.0.1:${ports[i]}`;

beforeAll(async () => {
  for (let i = 0; i < 3; i++) {
    ports.push(await freePort());
    await start(i);
  }
});

/** A command sent to any live node, retried (same Idempotency-Key) through kills and restarts. */
async function command(path: string, body: unknown, status: number): Promise<any> {
  const key = ikey('chaos');
  for (let round = 0; ; round++) {
    const live = gateways.map((g, i) => (g ? i : -1)).filter((i) => i >= 0);
    try {
      const r = await call(url(live[round % live.length]!), 'POST', path, { token: own.t.token, key, body });
      if (r.status === status || (r.status === 200 && status === 201)) return r.body.data;
      if (r.status !== 503) throw new Error(`${path}: ${r.status} ${r.text}`);
    } catch (err) {
      if (round > 60 || (err as Error).message.startsWith(path)) throw err;
    }
    await sleep(250);
  }
}

describe('schedules under kill -9 of gateways and a database restart', () => {
  it('every fire time has exactly one record and each created one exactly one task', async (ctx) => {
    ctx.onTestFailed(() => {
      const errors = all.flatMap((g) => g.output.filter((l) => /"level":(50|60)/.test(l)));
      process.stderr.write(`gateway errors:\n${errors.slice(-30).join('\n')}\n`);
    });
    const workers = [0, 1].map((i) => spawnWorker(url(i), own.t.token, [own.t.queue_id], { WORKER_CAPACITY: '16', WORKER_DELAY_MS: '5' }));
    await Promise.all(workers.map((w) => w.ready));
    const specs = [
      { calendar: { every_seconds: 1 } },
      { calendar: { every_seconds: 2 }, catchup: 'all' },
      { calendar: { cron: '* * * * *' } },
      { calendar: { cron: '* * * * *', timezone: 'Europe/Berlin' }, catchup: 'all', overlap: 'skip' },
    ];
    const made: { id: string; version: any }[] = [];
    for (const s of specs) {
      const d = await command(
        '/v1/schedules',
        { name: scheduleName('chaos'), version: versionBody(own.t.queue_id, s, { handler: 'h', concurrency_key: `chaos/${made.length}` }) },
        201,
      );
      made.push({ id: d.schedule.id, version: d.version });
    }

    await sleep(6000);
    await kill(1);
    await sleep(3000);
    await start(1);
    await sleep(4000);
    await Promise.all([kill(0), kill(2)]);
    await sleep(2000);
    await Promise.all([start(0), start(2)]);
    await sleep(5000);
    own.server.child.kill('SIGKILL');
    await sleep(2000);
    await own.server.restart();
    await sleep(8000);
    // Every node down across several fire times (longer than the catch-up grace of 5 s).
    await Promise.all([kill(0), kill(1), kill(2)]);
    await sleep(8000);
    await Promise.all([start(0), start(1), start(2)]);
    await sleep(8000);
    await kill(2);
    await start(2);
    // The cron schedules fire once a minute: run on until their first fire time has passed too.
    const firstCron = Date.parse(made[2]!.version.created_at) - (Date.parse(made[2]!.version.created_at) % 60_000) + 60_000;
    await sleep(Math.max(6000, firstCron + 3000 - Date.now()));

    const pausedAt: number[] = [];
    for (const m of made) {
      const s = (await call(url(0), 'GET', `/v1/schedules/${m.id}`, { token: own.t.token })).body.data.schedule;
      const p = await command(`/v1/schedules/${m.id}:pause`, { expected_revision: s.revision }, 200);
      pausedAt.push(Date.parse(p.schedule.updated_at));
    }

    for (const [i, m] of made.entries()) {
      const v = m.version;
      const nextAfter = compileCalendar('cron' in v.calendar ? v.calendar : { every_seconds: v.calendar.every_seconds }, Date.parse(v.created_at), null, null);
      const recs = await fireRecords(own.pool, m.id);
      expect(recs.length, `schedule ${i} fired`).toBeGreaterThan(0);
      // The calendar's times from the first fire after publication up to the last record: each has
      // exactly one record (the primary key forbids two), none is missing.
      const expected: number[] = [];
      for (let at = nextAfter(Date.parse(v.created_at)); at !== null && at <= recs[recs.length - 1]!.scheduled_for; at = nextAfter(at)) expected.push(at);
      expect(
        recs.map((r) => r.scheduled_for),
        `schedule ${i} fire times`,
      ).toEqual(expected);
      // Nothing due before the pause was left unfired (a fire a second after its time is still on time).
      const lastDue = (() => {
        let last = 0;
        for (let at = nextAfter(Date.parse(v.created_at)); at !== null && at <= pausedAt[i]! - 1500; at = nextAfter(at)) last = at;
        return last;
      })();
      if (lastDue > 0) expect(recs[recs.length - 1]!.scheduled_for, `schedule ${i} fired up to the pause`).toBeGreaterThanOrEqual(lastDue);
      const [rows] = await own.pool.query<RowDataPacket[]>('SELECT id, scheduled_for FROM tasks WHERE schedule_id = ? ORDER BY scheduled_for', [m.id]);
      const tasks = rows.map((r) => ({ id: r.id as string, at: Date.parse(String(r.scheduled_for).replace(' ', 'T') + 'Z') }));
      const created = recs.filter((r) => r.outcome === 'created');
      expect(
        tasks.map((x) => x.at),
        `schedule ${i}: one task per created fire, none twice`,
      ).toEqual(created.map((r) => r.scheduled_for));
      expect(tasks.map((x) => x.id)).toEqual(created.map((r) => r.task_id));
      expect(recs.filter((r) => r.outcome !== 'created').every((r) => r.task_id === null)).toBe(true);
      expect(recs.every((r) => ['created', 'skipped_catchup', 'skipped_overlap'].includes(r.outcome))).toBe(true);
      if (i === 0) expect(recs.length).toBeGreaterThan(50);
    }
    await assertPermitInvariants(own.pool);
    for (const g of gateways) expect(g?.child.exitCode ?? null).toBeNull();
  }, 180_000);
});
