// Leases follow the database clock, never a gateway's (docs/design.md: every time Orbit stores is the
// database's UTC_TIMESTAMP(3)). Every process of a test run shares one host clock, so a lease
// computed from a gateway's clock would go unnoticed; here two gateway processes run under
// libfaketime (Debian's faketime, LD_PRELOAD on the gateway process only), one an hour ahead of the
// database and one an hour behind it. Through each, over raw sockets: the lease a claim grants,
// the one a start sets and the one a renew extends end the queue's lease after the DATABASE's now;
// the sweeper expires a lease the database sees ended and leaves alone one it sees live.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { aptInstall } from '../server/mariadb/mariadb-install.js';
import { createQueue, submit } from './support/dispatch-fixture.js';
import { useGatewayFixture } from './support/fixture.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { call } from './support/http.js';
import { assertPermitInvariants } from './support/invariants.js';
import { hello, openRaw, type RawWorker } from './support/raw-worker.js';
import { waitFor } from './support/wait.js';

const LEASE_S = 60;
/** How far a lease may sit below now + LEASE_S: the time between the write and the test's read. */
const SLACK_MS = 10_000;
const OFFSETS = { ahead: 3600, behind: -3600 } as const;

/** libfaketime's library, installed with apt-get when missing (as the Galera test installs its
 * provider): a machine without it fails this file with the reason, nothing is skipped. */
function faketimeLibrary(): string {
  const find = () =>
    fs
      .readdirSync('/usr/lib', { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => path.join('/usr/lib', d.name, 'faketime/libfaketime.so.1'))
      .find((p) => fs.existsSync(p));
  if (!find()) aptInstall(['faketime'], (l) => process.stderr.write(l + '\n'), 'libfaketime is missing and this user cannot `apt-get install -y faketime`');
  const lib = find();
  if (!lib) throw new Error('faketime installed but no libfaketime.so.1 under /usr/lib/*/faketime/');
  return lib;
}

/** The environment of a gateway whose wall clock is `seconds` off the host's (its timers, on the
 * monotonic clock, are left alone). */
function offsetClock(seconds: number): Record<string, string> {
  return { LD_PRELOAD: faketimeLibrary(), FAKETIME: `${seconds >= 0 ? '+' : ''}${seconds}`, FAKETIME_DONT_FAKE_MONOTONIC: '1' };
}

const f = useGatewayFixture({ gatewayEnv: offsetClock(OFFSETS.ahead) });
const gateways = new Map<keyof typeof OFFSETS, GatewayProcess>();
const sockets: RawWorker[] = [];

beforeAll(async () => {
  gateways.set('ahead', f.gw);
  gateways.set('behind', await startGateway(f.db.dsn, offsetClock(OFFSETS.behind)));
});
afterEach(async () => {
  for (const w of sockets.splice(0)) w.close();
  await assertPermitInvariants(f.db.pool);
});

async function dbNowMs(): Promise<number> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>("SELECT DATE_FORMAT(UTC_TIMESTAMP(3), '%Y-%m-%dT%H:%i:%s.%fZ') AS now");
  return Date.parse(rows[0]!.now as string);
}

/** The attempt's state and the time its lease has left by the database clock. */
async function lease(attemptId: string): Promise<{ state: string; leftMs: number }> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>(
    'SELECT state, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), lease_expires_at) DIV 1000 AS left_ms FROM attempts WHERE id = ?',
    [attemptId],
  );
  return { state: rows[0]!.state as string, leftMs: Number(rows[0]!.left_ms) };
}

/** A lease (stored, or answered as an ISO time read against the database's now) that ends the
 * queue's lease after the database's now: a gateway clock an hour off is far outside. */
function expectFullLease(leftMs: number, what: string): void {
  expect(leftMs, `${what}: ms left by the database clock`).toBeGreaterThan(LEASE_S * 1000 - SLACK_MS);
  expect(leftMs, `${what}: ms left by the database clock`).toBeLessThanOrEqual(LEASE_S * 1000);
}

async function session(gw: GatewayProcess, queueId: string): Promise<RawWorker> {
  const w = await openRaw(gw.url, f.t.token);
  sockets.push(w);
  w.send(hello([queueId], { capacity: 2 }));
  await w.next('hello.ok');
  return w;
}

describe.each(Object.keys(OFFSETS) as (keyof typeof OFFSETS)[])('a gateway whose clock is an hour %s of the database', (side) => {
  it('runs on that clock (the HTTP Date header), so the checks below can tell the two clocks apart', async () => {
    const r = await call(gateways.get(side)!.url, 'GET', '/v1/openapi.json');
    const offsetMs = Date.parse(r.headers.get('date')!) - (await dbNowMs());
    expect(Math.abs(offsetMs - OFFSETS[side] * 1000)).toBeLessThan(5_000);
  });

  it('claim, start and renew set leases of now + lease_seconds by the database clock', async () => {
    const gw = gateways.get(side)!;
    const q = await createQueue(f, { lease_seconds: LEASE_S });
    const w = await session(gw, q.id);
    await submit(f, q.id);
    const a = await w.next('task.assign');
    expectFullLease((await lease(a.attempt_id)).leftMs, 'claimed');
    expectFullLease(Date.parse(a.lease_expires_at) - (await dbNowMs()), 'task.assign lease_expires_at');

    await f.db.pool.query('UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL 20 SECOND WHERE id = ?', [a.attempt_id]);
    w.send({ type: 'start', attempt_id: a.attempt_id });
    const started = await w.next('start.ok');
    expectFullLease((await lease(a.attempt_id)).leftMs, 'started');
    expectFullLease(Date.parse(started.lease_expires_at) - (await dbNowMs()), 'start.ok lease_expires_at');

    await f.db.pool.query('UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL 20 SECOND WHERE id = ?', [a.attempt_id]);
    w.send({ type: 'renew', attempt_ids: [a.attempt_id] });
    const renewed = await w.next('renew.ok');
    expect(renewed.lost).toEqual([]);
    expectFullLease((await lease(a.attempt_id)).leftMs, 'renewed');
    expectFullLease(Date.parse(renewed.leases[0].lease_expires_at) - (await dbNowMs()), 'renew.ok lease_expires_at');

    w.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded' });
    await w.next('result.ok');
  });

  it('the sweeper expires the lease the database sees ended and leaves the live one alone', async () => {
    const gw = gateways.get(side)!;
    const q = await createQueue(f, { lease_seconds: LEASE_S });
    const w = await session(gw, q.id);
    await submit(f, q.id);
    await submit(f, q.id);
    const [ended, live] = [await w.next('task.assign'), await w.next('task.assign')];
    for (const a of [ended, live]) {
      w.send({ type: 'start', attempt_id: a.attempt_id });
      await w.next('start.ok');
    }
    await f.db.pool.query('UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE id = ?', [ended.attempt_id]);
    // The ended lease's expiry (a started attempt: UNKNOWN, its task NEEDS_REVIEW) shows a sweep ran
    // (one of the two gateways'); the live one stays.
    await waitFor('the ended lease expired', async () => (await lease(ended.attempt_id)).state === 'UNKNOWN', 10_000);
    const after = await lease(live.attempt_id);
    expect(after.state).toBe('RUNNING');
    expectFullLease(after.leftMs, 'the live lease after a sweep');

    w.send({ type: 'result', attempt_id: live.attempt_id, outcome: 'succeeded' });
    await w.next('result.ok');
  });
});
