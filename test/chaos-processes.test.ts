// ORBIT_PROCESSES=2 (server/cli/processes.ts): one gateway node as two processes sharing one port,
// against a real `orbit` process. Both processes serve HTTP and WebSocket sessions (the sessions
// land on both node ids), tasks complete through the SDK, one scrape of /metrics sees the node's
// totals; kill -9 of one process → the primary restarts it and the attempts of its sessions are
// recovered (the SDK's reconnect and resume, the sweeper); SIGTERM → every process drains and exits.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { endOfFileChecks } from './support/fixture.js';
import { checkHistory } from './support/history.js';
import { assertPermitInvariants } from './support/invariants.js';
import { waitFor } from './support/wait.js';
import { createClient, createWorker, type Worker } from '../worker-sdk/index.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';

const quiet = { info() {}, warn() {}, error() {} };
let db: TestDb;
let t: CredentialsFile;
let gw: GatewayProcess;
const workers: Worker[] = [];

/** The JSON log lines of the node (primary and processes) with `msg`. */
const lines = (msg: string) => gw.output.filter((l) => l.includes(`"msg":"${msg}"`)).map((l) => JSON.parse(l) as Record<string, any>);

/** GET on a new TCP connection each time (no keep-alive): node:cluster hands each connection to
 * the next process, so a few requests reach both. */
function getFresh(path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(gw.url + path, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
  });
}

const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

async function openSessions(): Promise<{ node_id: string; n: number }[]> {
  const [rows] = await db.pool.query<RowDataPacket[]>(
    "SELECT node_id, COUNT(*) AS n FROM worker_sessions WHERE namespace_id = ? AND state <> 'CLOSED' GROUP BY node_id ORDER BY node_id",
    [t.namespace_id],
  );
  return rows.map((r) => ({ node_id: r.node_id as string, n: Number(r.n) }));
}

async function tasksByState(): Promise<Record<string, number>> {
  const [rows] = await db.pool.query<RowDataPacket[]>('SELECT state, COUNT(*) AS n FROM tasks WHERE namespace_id = ? GROUP BY state', [t.namespace_id]);
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// Handlers wait for this gate while `hold` is set, so attempts are RUNNING when a process is killed.
let hold = false;
const gate: (() => void)[] = [];
const release = () => {
  hold = false;
  for (const r of gate.splice(0)) r();
};

beforeAll(async () => {
  db = await createTestDb();
  t = await newTenant(db);
  // Short leases: an attempt that no session resumes is recovered within seconds.
  await db.pool.query('UPDATE queues SET lease_seconds = 5');
  // debug: the per-request lines (info today) name the process that served each request.
  gw = await startGateway(db.dsn, { ORBIT_PROCESSES: '2', ORBIT_NODE_ID: 'procs', ORBIT_LOG_LEVEL: 'debug' });
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.close({ timeoutMs: 2_000 }).catch(() => {})));
  await endOfFileChecks(db);
});

async function submit(n: number, tag: string): Promise<string[]> {
  const client = createClient({ url: gw.url, token: t.token });
  const items = Array.from({ length: n }, (_, i) => ({
    queue_id: t.queue_id,
    handler: 'job',
    handler_version: 'v1',
    payload_version: 'v1',
    payload: { i },
    idempotency_key: `${tag}-${i}`,
  }));
  const results = await client.submitTasks(items);
  return results.map((r) => {
    if (!('data' in r)) throw new Error(`submit refused: ${JSON.stringify(r.error)}`);
    return r.data.task.id;
  });
}

describe('ORBIT_PROCESSES=2: one node, two gateway processes on one port', () => {
  it('both processes serve HTTP and WebSocket sessions; tasks complete through the SDK; /metrics sees the totals', async () => {
    const ready = lines('orbit gateway ready')[0]!;
    const procs = ready.processes as { pid: number; node_id: string }[];
    expect(procs.map((p) => p.node_id).sort()).toEqual(['procs-1', 'procs-2']);
    expect(new Set(procs.map((p) => p.pid)).size).toBe(2);
    expect(procs.every((p) => p.pid !== gw.child.pid && isAlive(p.pid))).toBe(true);

    // HTTP: requests on fresh connections are answered by both processes.
    for (let i = 0; i < 8; i++) expect((await getFresh('/healthz')).status).toBe(200);
    const served = new Set(
      lines('request')
        .filter((l) => l.route === 'GET /healthz')
        .map((l) => l.node_id as string),
    );
    expect([...served].sort()).toEqual(['procs-1', 'procs-2']);

    // WebSocket: four SDK workers; their sessions land on both processes.
    for (let i = 0; i < 4; i++)
      workers.push(
        createWorker({
          url: gw.url,
          token: t.token,
          queues: [t.queue_id],
          capacity: 4,
          logger: quiet,
          handlers: {
            job: async (e: { task: { payload: { i: number } } }) => {
              if (hold) await new Promise<void>((r) => gate.push(r));
              return { i: e.task.payload.i };
            },
          },
        }),
      );
    await Promise.all(workers.map((w) => w.ready));
    const sessions = await waitFor('four open sessions', async () => ((await openSessions()).reduce((a, s) => a + s.n, 0) === 4 ? openSessions() : null), {
      timeout: 10_000,
    });
    expect(sessions.map((s) => s.node_id)).toEqual(['procs-1', 'procs-2']);

    // Tasks submitted through either process run on sessions of both.
    const ids = await submit(200, 'a');
    await waitFor('200 tasks succeeded', async () => (await tasksByState()).SUCCEEDED === 200, { timeout: 30_000 });
    const [byNode] = await db.pool.query<RowDataPacket[]>(
      `SELECT DISTINCT s.node_id FROM attempts a JOIN worker_sessions s ON s.id = a.session_id WHERE a.task_id IN (?) ORDER BY s.node_id`,
      [ids],
    );
    expect(byNode.map((r) => r.node_id)).toEqual(['procs-1', 'procs-2']);

    // One scrape, whichever process answers, sees the node's totals: both processes' sessions and
    // every task either of them finished.
    for (let i = 0; i < 4; i++) {
      const text = (await getFresh('/metrics')).body;
      expect(metric(text, 'orbit_gateway_processes')).toBe(2);
      expect(metric(text, 'orbit_live_sessions')).toBe(4);
      expect(metric(text, 'orbit_tasks_finished_total\\{outcome="succeeded"\\}')).toBe(200);
      expect(metric(text, 'orbit_tasks_accepted_total')).toBe(200);
    }
  });

  it('kill -9 of one process: the primary restarts it, the attempts of its sessions are recovered', async () => {
    hold = true;
    const ids = await submit(16, 'b');
    // All 16 running (4 workers × capacity 4), on sessions of both processes.
    const [running] = await waitFor(
      '16 attempts running',
      async () => {
        const r = await db.pool.query<RowDataPacket[]>(
          "SELECT a.id, s.node_id FROM attempts a JOIN worker_sessions s ON s.id = a.session_id WHERE a.task_id IN (?) AND a.state = 'RUNNING'",
          [ids],
        );
        return r[0].length === 16 ? r : null;
      },
      { timeout: 15_000 },
    );
    const victim = (lines('orbit gateway ready')[0]!.processes as { pid: number; node_id: string }[]).find((p) => p.node_id === 'procs-1')!;
    const onVictim = running.filter((r) => r.node_id === 'procs-1').map((r) => r.id as string);
    expect(onVictim.length).toBeGreaterThan(0);

    const killedAt = Date.now();
    process.kill(victim.pid, 'SIGKILL');
    const restarted = await waitFor('the restart', async () => lines('gateway process restarted')[0], { timeout: 20_000 });
    expect(lines('gateway process exited; restarting it (its sessions are recovered by the sweepers)')[0]).toMatchObject({
      process: 1,
      pid: victim.pid,
      node_id: 'procs-1',
      signal: 'SIGKILL',
    });
    expect(restarted).toMatchObject({ process: 1, node_id: 'procs-1' });
    expect(restarted.pid).not.toBe(victim.pid);
    expect(isAlive(restarted.pid)).toBe(true);
    expect(gw.child.exitCode).toBeNull();

    // The workers of the killed process reconnect (the port is the node's) and resume; nothing is
    // lost: every task succeeds, each exactly once, with its history intact.
    release();
    await waitFor('every task succeeded', async () => (await tasksByState()).SUCCEEDED === 216, { timeout: 60_000 });
    const [after] = await db.pool.query<RowDataPacket[]>('SELECT id, state FROM attempts WHERE id IN (?)', [onVictim]);
    // Each attempt of the killed process either finished in the session that resumed it or was
    // expired by the sweeper and its task run again.
    expect(after.every((r) => ['SUCCEEDED', 'EXPIRED'].includes(r.state))).toBe(true);
    const h = await checkHistory(db.pool, t.namespace_id);
    expect(h.violations).toEqual([]);
    expect(h.byState).toEqual({ SUCCEEDED: 216 });
    await assertPermitInvariants(db.pool);

    // The killed process's sessions are closed; the workers are back on both processes, the
    // restarted one included (sessions opened after the kill).
    await waitFor(
      "the killed process's sessions closed and four sessions open",
      async () => {
        const [old] = await db.pool.query<RowDataPacket[]>(
          "SELECT COUNT(*) AS n FROM worker_sessions WHERE node_id = 'procs-1' AND state <> 'CLOSED' AND connected_at < FROM_UNIXTIME(? / 1000)",
          [killedAt],
        );
        return Number(old[0]!.n) === 0 && (await openSessions()).reduce((a, s) => a + s.n, 0) === 4;
      },
      { timeout: 30_000 },
    );
    // The restarted process serves too: more fresh connections reach it.
    for (let i = 0; i < 8; i++) await getFresh('/healthz');
    const servedBy = new Set(
      lines('request')
        .filter((l) => l.route === 'GET /healthz' && l.time > restarted.time)
        .map((l) => l.node_id as string),
    );
    expect([...servedBy].sort()).toEqual(['procs-1', 'procs-2']);
    const text = (await getFresh('/metrics')).body;
    expect(metric(text, 'orbit_gateway_processes')).toBe(2);
    expect(metric(text, 'orbit_gateway_process_restarts_total')).toBe(1);
  });

  it('SIGTERM: every process drains and exits, then the primary exits 0', async () => {
    await Promise.all(workers.splice(0).map((w) => w.close({ timeoutMs: 5_000 })));
    const pids = [
      lines('orbit gateway ready')[0]!.processes.find((p: any) => p.node_id === 'procs-2').pid as number,
      lines('gateway process restarted')[0]!.pid as number,
    ];
    expect(pids.every(isAlive)).toBe(true);
    expect(await gw.stop()).toBe(0);
    expect(pids.some(isAlive)).toBe(false);
    // Each process went through the gateway's own drain (goaway, in-flight transactions, pool).
    const stopped = lines('gateway stopped').map((l) => l.node_id as string);
    expect(stopped.sort()).toEqual(['procs-1', 'procs-2']);
    expect(
      lines('gateway process exited')
        .map((l) => l.node_id)
        .sort(),
    ).toEqual(['procs-1', 'procs-2']);
  });
});
