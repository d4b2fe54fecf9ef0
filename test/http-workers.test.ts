// Contract: GET /v1/workers?queue_id= (docs/operations.md): connected sessions of the namespace, read from
// the sessions table so that every node lists the sessions of every node. Real gateways (two nodes
// on one database), real worker sockets.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newTenant } from './support/db.js';
import { closeWorkers, connect, createQueue, nextOf, setCapacity, submit } from './support/dispatch-fixture.js';
import { useGatewayFixture } from './support/fixture.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { call } from './support/http.js';
import { expectData, expectError, limitedCredential } from './support/contract.js';
import { hello, openRaw } from './support/raw-worker.js';
import { waitFor } from './support/wait.js';

const f = useGatewayFixture({ gatewayEnv: { ORBIT_NODE_ID: 'node-a' } });
let nodeB: GatewayProcess;
beforeAll(async () => {
  nodeB = await startGateway(f.db.dsn, { ORBIT_NODE_ID: 'node-b' });
});
afterEach(() => closeWorkers(f));

const workers = (query = '', token = f.t.token, url = f.gw.url) => call(url, 'GET', `/v1/workers${query}`, { token });
const list = async (query = '', url = f.gw.url) => expectData(await workers(query, f.t.token, url), 200).workers as any[];
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('GET /v1/workers', () => {
  it('lists a connected session with every field; capacity, in-flight and draining follow the socket', async () => {
    const q = await createQueue(f);
    const { w, ok, workerId } = await connect(f, [q.id], { capacity: 3, concurrency_keys: true });
    const [s] = (await list(`?queue_id=${q.id}`)).filter((x) => x.session_id === ok.session_id);
    expect(Object.keys(s).sort()).toEqual(
      ['capacity', 'concurrency_keys', 'connected_at', 'draining', 'in_flight', 'last_seen_at', 'node_id', 'queues', 'session_id', 'worker_id'].sort(),
    );
    expect(s).toMatchObject({ worker_id: workerId, node_id: 'node-a', queues: [q.id], capacity: 3, in_flight: 0, concurrency_keys: true, draining: false });
    expect(s.connected_at).toMatch(ISO_MS);
    expect(s.last_seen_at).toMatch(ISO_MS);

    await submit(f, q.id);
    await nextOf(w, ['task.assign']);
    await setCapacity(w, 5);
    await waitFor('capacity and in-flight', async () => {
      const [x] = await list(`?queue_id=${q.id}`);
      return x?.capacity === 5 && x.in_flight === 1;
    });
    w.send({ type: 'drain' });
    await w.next('drain.ok');
    await waitFor('draining', async () => (await list(`?queue_id=${q.id}`))[0]?.draining === true);
    w.close();
    await w.closed;
    await waitFor('gone after close', async () => (await list(`?queue_id=${q.id}`)).length === 0);
  });

  it('every node lists the sessions of every node; the queue filter selects', async () => {
    const q1 = await createQueue(f);
    const q2 = await createQueue(f);
    const { ok: a } = await connect(f, [q1.id], { concurrency_keys: false });
    const wb = await openRaw(nodeB.url, f.t.token);
    f.workers.push(wb);
    wb.send(hello([q1.id, q2.id]));
    const b = await wb.next('hello.ok');
    for (const url of [f.gw.url, nodeB.url]) {
      const all = await list(`?queue_id=${q1.id}`, url);
      expect(all.map((x) => [x.session_id, x.node_id]).sort()).toEqual(
        [
          [a.session_id, 'node-a'],
          [b.session_id, 'node-b'],
        ].sort(),
      );
      expect((await list(`?queue_id=${q2.id}`, url)).map((x) => x.session_id)).toEqual([b.session_id]);
      expect((await list('', url)).map((x) => x.session_id)).toEqual(expect.arrayContaining([a.session_id, b.session_id]));
    }
    expect((await list(`?queue_id=${q1.id}`)).find((x) => x.session_id === a.session_id).concurrency_keys).toBe(false);
  });

  it('a session whose node stopped refreshing it (killed with -9) drops out once stale', async () => {
    const q = await createQueue(f);
    const { ok } = await connect(f, [q.id]);
    expect((await list(`?queue_id=${q.id}`)).map((x) => x.session_id)).toEqual([ok.session_id]);
    await f.db.pool.query(`UPDATE worker_sessions SET last_seen_at = UTC_TIMESTAMP(3) - INTERVAL 31 SECOND WHERE id = ?`, [ok.session_id]);
    expect(await list(`?queue_id=${q.id}`)).toEqual([]);
  });

  it('scope queues:manage; a credential limited to some queues sees only those', async () => {
    const q1 = await createQueue(f);
    const q2 = await createQueue(f);
    const { ok } = await connect(f, [q1.id, q2.id]);
    const { ok: only2 } = await connect(f, [q2.id]);
    const reader = await limitedCredential(f.db, f.t.namespace_id, ['tasks:read', 'events:read']);
    expectError(await workers('', reader.token), 403, 'PERMISSION_DENIED');
    const limited = await limitedCredential(f.db, f.t.namespace_id, ['queues:manage'], [q1.id]);
    const seen = expectData(await workers('', limited.token), 200).workers as any[];
    expect(seen.map((x) => [x.session_id, x.queues])).toEqual([[ok.session_id, [q1.id]]]);
    expect(seen.map((x) => x.session_id)).not.toContain(only2.session_id);
    expectError(await workers(`?queue_id=${q2.id}`, limited.token), 403, 'PERMISSION_DENIED');
    const other = await newTenant(f.db);
    expect(expectData(await workers('', other.token), 200).workers).toEqual([]);
    expect(expectError(await workers(`?queue_id=${q1.id}`, other.token), 404, 'NOT_FOUND').details?.field).toBe('queue_id');
    expectError(await workers('', 'orb_unknown-token'), 401, 'UNAUTHENTICATED');
  });

  it('bad queue ids are 404 without SQL; unknown or repeated parameters are 400', async () => {
    const q = await createQueue(f);
    for (const id of ['', q.id.toUpperCase(), q.id.slice(2), 'z'.repeat(32), "1' OR '1'='1"]) {
      expectError(await workers(`?queue_id=${encodeURIComponent(id)}`), 404, 'NOT_FOUND');
    }
    expect(expectError(await workers(`?queue_id=${q.id}&queue_id=${q.id}`), 400, 'INVALID_ARGUMENT').details?.field).toBe('queue_id');
    expect(expectError(await workers('?limit=5'), 400, 'INVALID_ARGUMENT').details?.field).toBe('limit');
    expectError(await call(f.gw.url, 'POST', '/v1/workers', { token: f.t.token, body: {} }), 405, 'METHOD_NOT_ALLOWED');
  });
});
