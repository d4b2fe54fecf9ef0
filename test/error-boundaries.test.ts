// Error boundaries: the fault gateway (bench/fault-gateway.ts, the real node with its handlers
// wrapped from outside) throws an unexpected Error at a point the test arms. Each kind of handler —
// HTTP request, WebSocket frame, upgrade, timer — must end only that request (500 INTERNAL in the
// envelope) or that session (error frame, close 1011), log it with its id, count it in
// orbit_internal_errors_total, and the node must keep serving everyone else.
import { beforeAll, describe, expect, it } from 'vitest';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { newTenant } from './support/db.js';
import { expectServing as expectNodeServing } from './support/serving.js';
import { submitTask } from './support/submit.js';
import { useGatewayFixture } from './support/fixture.js';
import { fault, FAULT_GATEWAY, type FaultPoint } from './support/faults.js';
import { call } from './support/http.js';
import { hello, openRaw } from './support/raw-worker.js';
import { waitFor, waitForValue } from './support/wait.js';

// Pings every 300 ms (default 15 s), so that the timer test sees the ping loop tick after the fault.
const PING_MS = 300;
const f = useGatewayFixture({ script: FAULT_GATEWAY, gatewayEnv: { ORBIT_PING_INTERVAL_MS: String(PING_MS) } });

const arm = (point: FaultPoint) => fault(f.gw, { point });

async function internalErrors(where: string): Promise<number> {
  const text = (await call(f.gw.url, 'GET', '/metrics')).text;
  const m = new RegExp(`^orbit_internal_errors_total\\{where="${where}"\\} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

let probe: CredentialsFile;
beforeAll(async () => {
  probe = await newTenant(f.db);
});
const expectServing = () => expectNodeServing(f.gw, probe);

describe('an unexpected exception ends one request or session, never the node', () => {
  it('HTTP request handler → 500 INTERNAL in the envelope with the request id', async () => {
    const before = await internalErrors('http');
    await arm('http');
    const r = await call(f.gw.url, 'GET', '/v1/queues', { token: f.t.token });
    expect(r.status).toBe(500);
    expect(r.body.error.code).toBe('INTERNAL');
    expect(r.body.request_id).toBe(r.headers.get('x-request-id'));
    expect(await internalErrors('http')).toBe(before + 1);
    expect(f.gw.output.some((l) => l.includes(r.body.request_id) && l.includes('injected fault at http'))).toBe(true);
    await expectServing();
  });

  it('WebSocket frame handler → that session gets INTERNAL and 1011; another session is untouched', async () => {
    const bystander = await openRaw(f.gw.url, f.t.token);
    bystander.send(hello([f.t.queue_id], { capacity: 0 }));
    await bystander.next('hello.ok');
    const w = await openRaw(f.gw.url, f.t.token);
    w.send(hello([f.t.queue_id], { capacity: 0 }));
    await w.next('hello.ok');
    const before = await internalErrors('frame');
    await arm('frame');
    w.send({ type: 'capacity', capacity: 0 });
    expect(await w.next('error')).toMatchObject({ code: 'INTERNAL', fatal: true });
    expect((await w.closed).code).toBe(1011);
    expect(await internalErrors('frame')).toBe(before + 1);
    // The bystander's session still answers.
    bystander.send({ type: 'drain' });
    expect(await bystander.next('drain.ok')).toEqual({ type: 'drain.ok' });
    bystander.close();
    await bystander.closed;
    await expectServing();
  });

  it('upgrade → the new socket is closed 1011, the node keeps accepting', async () => {
    const before = await internalErrors('upgrade');
    await arm('upgrade');
    const w = await openRaw(f.gw.url, f.t.token);
    expect(await w.next('error')).toMatchObject({ code: 'INTERNAL', fatal: true });
    expect((await w.closed).code).toBe(1011);
    expect(await internalErrors('upgrade')).toBe(before + 1);
    await expectServing();
  });

  it('timer → counted, and every loop (dispatcher, sweeper, pings) keeps running', async () => {
    const before = await internalErrors('timer');
    await arm('timer');
    // Until the counter moves (or 5 s), then exactly one more.
    await waitForValue(
      () => internalErrors('timer'),
      (n) => n !== before,
      { timeout: 5_000, interval: 50 },
    );
    expect(await internalErrors('timer')).toBe(before + 1);
    // Dispatcher: a submitted task is assigned to a normal worker.
    await expectServing();
    // Sweeper: a lease backdated in SQL is recovered (attempt EXPIRED, task.cancel to the worker).
    const t = await newTenant(f.db);
    const w = await openRaw(f.gw.url, t.token);
    let pings = 0;
    w.ws.on('ping', () => pings++);
    w.send(hello([t.queue_id], { capacity: 1 }));
    await w.next('hello.ok');
    await submitTask(f.gw.url, t);
    const a = await w.next('task.assign');
    await f.db.pool.query('UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE id = ?', [a.attempt_id]);
    expect(await w.next('task.cancel')).toMatchObject({ attempt_id: a.attempt_id });
    const [[row]] = (await f.db.pool.query('SELECT state FROM attempts WHERE id = ?', [a.attempt_id])) as any;
    expect(row.state).toBe('EXPIRED');
    // Pings: this session, opened after the fault, is pinged.
    await waitFor('a ping of the gateway', () => pings > 0, { timeout: 20 * PING_MS });
    w.close();
    await w.closed;
    expect(await internalErrors('timer')).toBe(before + 1);
  });
});
