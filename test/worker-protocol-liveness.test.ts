// Worker protocol contract (docs/worker-protocol.md) over a raw WebSocket, after hello: a
// credential revoked while its session is connected, heartbeats and the ping that comes with an
// assignment. No SDK, no mocks: a real gateway process and its database. Frame validation,
// per-attempt errors and intake: worker-protocol-session.test.ts.
import { beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { RowDataPacket } from 'mysql2/promise';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { hello, openRaw } from './support/raw-worker.js';
import { FAST_ENV, GW_ENV, PING_MS, expectNothing, protocolHelpers, session } from './support/worker-protocol-fixture.js';
import { waitForValue } from './support/wait.js';
import { revokeCredential } from '../server/db/credentials.js';
import { metric } from './support/keys-helpers.js';
import { submitTask } from './support/submit.js';

/** Short hello timeout and ping interval (f.gw: default timings, small frame limit). */
let fast: GatewayProcess;

const f = useGatewayFixture({ gatewayEnv: GW_ENV });
beforeAll(async () => {
  fast = await startGateway(f.db.dsn, FAST_ENV);
});

const { credential, attemptRow, sessionRow } = protocolHelpers(() => f);

// ---- credential revocation ----------------------------------------------------------------------

describe('credential revoked while connected', () => {
  it('the live session gets UNAUTHENTICATED and close 1008; its attempts are untouched', async () => {
    const tn = await newTenant(f.db);
    const c = await credential(tn, ['workers:connect', 'workers:consume']);
    const other = await credential(tn, ['workers:connect', 'workers:consume']);
    const w = await openRaw(f.gw.url, c.token);
    w.send(hello([tn.queue_id], { capacity: 1 }));
    const ok = await w.next('hello.ok');
    const { w: bystander } = await session(f.gw.url, { ...tn, token: other.token }, { capacity: 0 });
    await submitTask(f.gw.url, tn);
    const a = await w.next('task.assign');
    const before = await attemptRow(a.attempt_id);
    expect(await revokeCredential(f.db.pool, c.id)).toBe(true);
    const err = await w.next('error', 5000);
    expect(err).toMatchObject({ type: 'error', code: 'UNAUTHENTICATED', fatal: true });
    expect((await w.closed).code).toBe(1008);
    expect(
      await waitForValue(
        () => sessionRow(ok.session_id),
        (r) => r?.state === 'CLOSED',
      ),
    ).toMatchObject({ close_code: 1008 });
    expect(await attemptRow(a.attempt_id)).toEqual(before);
    // Sessions of other credentials are not affected.
    expect(bystander.ws.readyState).toBe(WebSocket.OPEN);
    bystander.close();
  });
});

// ---- heartbeats ---------------------------------------------------------------------------------

describe('pings', () => {
  it('the gateway pings; a client that answers stays open', async () => {
    const { w } = await session(fast.url, f.t, { capacity: 0 });
    let pings = 0;
    w.ws.on('ping', () => pings++);
    await expectNothing(w, 'error', PING_MS * 6);
    expect(pings).toBeGreaterThanOrEqual(3);
    expect(w.ws.readyState).toBe(WebSocket.OPEN);
    w.close();
  });

  it('a client that leaves the ping sent with its assignment unanswered gets nothing more until it answers', async () => {
    const tn = await newTenant(f.db);
    const assignedTo = async (taskId: string) => {
      const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT session_id FROM attempts WHERE task_id = ?', [taskId]);
      return rows.map((r) => r.session_id as string);
    };
    const { w: frozen, ok } = await session(f.gw.url, tn, { capacity: 4 });
    // Like a stopped process (f.gw pings only every 15 s): the socket stays open, nothing is read.
    frozen.ws.pause();
    const stalls = await metric(f.gw.url, 'orbit_session_stalls_total');
    const t1 = await submitTask(f.gw.url, tn);
    await waitForValue(
      () => assignedTo(t1.id),
      (s) => s.length === 1,
    );
    await waitForValue(
      () => metric(f.gw.url, 'orbit_session_stalls_total'),
      (n) => n > stalls,
    );
    const t2 = await submitTask(f.gw.url, tn);
    const { w: live, ok: liveOk } = await session(f.gw.url, tn, { capacity: 1 });
    expect((await live.next('task.assign')).task.id).toBe(t2.id);
    expect(await assignedTo(t1.id)).toEqual([ok.session_id]);
    expect(await assignedTo(t2.id)).toEqual([liveOk.session_id]);
    // Read again, it answers the ping: the next task goes to it (the live session is full).
    frozen.ws.resume();
    const t3 = await submitTask(f.gw.url, tn);
    expect((await frozen.next('task.assign')).task.id).toBe(t1.id);
    expect((await frozen.next('task.assign')).task.id).toBe(t3.id);
    frozen.close();
    live.close();
  });

  it('a client that does not answer pongs is closed within a few intervals', async () => {
    const ws = new WebSocket(fast.url.replace(/^http/, 'ws') + '/v1/workers/connect', ['orbit.worker.v1'], {
      headers: { authorization: `Bearer ${f.t.token}` },
      autoPong: false,
    });
    let pings = 0;
    ws.on('ping', () => pings++);
    const closed = new Promise<{ code: number; at: number }>((r) => ws.once('close', (code) => r({ code, at: Date.now() })));
    const helloOk = new Promise<any>((r) =>
      ws.on('message', (d) => {
        const f = JSON.parse(d.toString());
        if (f.type === 'hello.ok') r(f);
      }),
    );
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify(hello([f.t.queue_id], { capacity: 0 })));
    await helloOk;
    const since = Date.now();
    const c = await closed;
    expect(pings).toBeGreaterThanOrEqual(2);
    expect(c.code).toBe(1006); // terminated, no close frame
    expect(c.at - since).toBeLessThan(PING_MS * 6);
  });
});
