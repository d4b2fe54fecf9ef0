// Single-writer Orbit on a real three-node MariaDB Galera cluster (docs/operations.md "High availability on MariaDB Galera"): two gateway processes
// and four SDK worker processes reach the cluster through one switchable TCP proxy (the one-writer
// proxy of docs/operations.md). Mid-load the writer node is killed with -9 and, one second later, the
// proxy is switched to a surviving node. Producers retry 503s with the same Idempotency-Key.
// At the end: every 2xx submit exists and is final, no task is duplicated or lost, and every
// invariant of docs/guarantees.md that a run can show holds (mutual exclusion and strictly
// increasing tokens per key in the history and in the workers' own logs, stable tokens, permit
// counters equal to the live attempts, one SUCCEEDED attempt per task, the result stream's head),
// and the two surviving nodes hold the same rows. A gateway pointed at another node than the
// others' is refused with one line (the single-writer check, writer-node.ts).
//
// Galera is installed with apt-get when missing; if it cannot be, the test fails with the reason.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { createPool, type Pool } from '../server/db/pool.js';
import { migrateUp } from '../server/mariadb/migrations.js';
import { bootstrap, type CredentialsFile } from '../server/admin/bootstrap.js';
import { startGaleraCluster, type GaleraCluster } from './support/galera.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { spawnWorker, type WorkerProcess } from './support/workers.js';
import { newSubmitStats, submitMany, taskBodies } from './support/bulk.js';
import { checkHistory, keyedRunOverlaps } from './support/history.js';
import { assertPermitInvariants } from './support/invariants.js';
import { endOfFileChecks } from './support/fixture.js';
import { waitFor } from './support/wait.js';

let cluster: GaleraCluster | undefined;
let proxy: TcpProxy | undefined;
let pool: Pool;
let t: CredentialsFile;
const gateways: GatewayProcess[] = [];
const DB = 'orbit';

/** Phase timings on stderr (the file's wall time is watched: CI has two cores). */
let phaseStart = Date.now();
function phase(what: string): void {
  process.stderr.write(`chaos-galera: ${what} in ${((Date.now() - phaseStart) / 1000).toFixed(1)} s\n`);
  phaseStart = Date.now();
}

beforeAll(async () => {
  cluster = await startGaleraCluster(3, (l) => process.stderr.write(l + '\n'));
  phase('cluster started');
  proxy = await startTcpProxy(cluster.nodes[0]!.port);
  const c = createPool(cluster.dsn(proxy.port, 'mysql'), { connectionLimit: 1 });
  await c.query(`CREATE DATABASE ${DB} CHARACTER SET utf8mb4`);
  await c.end();
  pool = createPool(cluster.dsn(proxy.port, DB), { connectionLimit: 4 });
  await migrateUp(pool);
  phase('migrated');
  t = await bootstrap(pool, { application: 'a', namespace: 'n', environment: 'test', queues: ['q'], workerAccess: true, url: '' });
  // Short leases: attempts whose result was lost with the writer are recovered within seconds.
  await pool.query('UPDATE queues SET lease_seconds = 5');
  for (const id of ['gw-1', 'gw-2']) gateways.push(await startGateway(cluster.dsn(proxy.port, DB), { ORBIT_NODE_ID: id }));
  phase('gateways started');
}, 240_000);

afterAll(async () => {
  await endOfFileChecks();
  await pool?.end().catch(() => {});
  await proxy?.close();
  await cluster?.stop();
});

async function count(sql: string): Promise<number> {
  const [r] = await pool.query<RowDataPacket[]>(sql);
  return Number(r[0]!.n);
}

describe('MariaDB Galera, one writer behind a proxy', () => {
  it('a gateway that would write through another node than the others is refused with one line', async () => {
    const direct = cluster!.dsn(cluster!.nodes[2]!.port, DB);
    const err = await startGateway(direct, { ORBIT_NODE_ID: 'gw-stray' }).then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/exited with 1/);
    const fatal = err!.message.split('\n').filter((l) => l.includes('"level":60'));
    expect(fatal).toHaveLength(1);
    expect(fatal[0]).toMatch(/writes through Galera node \\"node3\\" but live gateways write through another node \(gw-\d through \\"node1\\"/);
    const [rows] = await pool.query<RowDataPacket[]>('SELECT node_id, wsrep_on, wsrep_node_name FROM gateway_nodes ORDER BY node_id');
    expect(rows.map((r) => [r.node_id, Number(r.wsrep_on), r.wsrep_node_name])).toEqual([
      ['gw-1', 1, 'node1'],
      ['gw-2', 1, 'node1'],
    ]);
  });

  it('kill -9 of the writer node mid-load, proxy switched to a survivor: nothing lost, duplicated or overlapping', async () => {
    const gw = (i: number) => gateways[i % 2]!.url;
    const workers: WorkerProcess[] = [];
    const env = { WORKER_CAPACITY: '16', WORKER_DELAY_MS: '4', WORKER_LOG_RUNS: '1' };
    for (let i = 0; i < 4; i++) workers.push(spawnWorker(gw(i), t.token, [t.queue_id], env));
    await Promise.all(workers.map((w) => w.ready));

    // Half the tasks keyed over 12 keys, half unkeyed; producers alternate between the gateways.
    const HALF = 400;
    const body = (offset: number) => taskBodies(t.queue_id, HALF, (i) => ((offset + i) % 2 === 0 ? `object/${(offset + i) % 12}` : undefined));
    let rr = 0;
    const stats = newSubmitStats();
    const first = await submitMany(() => gw(rr++), t.token, body(0), { concurrency: 12, keyPrefix: 'first', stats });
    const second = submitMany(() => gw(rr++), t.token, body(HALF), { concurrency: 12, keyPrefix: 'second', stats });
    // The writer dies with submits, results and claims in flight.
    await waitFor('a third of the second load accepted', async () => stats.created >= HALF + HALF / 3, { timeout: 120_000, interval: 20 });
    const before = { ...stats, okAt: [], unavailableAt: [] };
    const killedAt = Date.now();
    await cluster!.nodes[0]!.kill9();
    await new Promise((r) => setTimeout(r, 1000));
    proxy!.switchTo(cluster!.nodes[1]!.port);
    const switchedAt = Date.now();
    const ids = [...first, ...(await second)];
    phase('load submitted');

    expect(new Set(ids).size).toBe(2 * HALF);
    const final = await waitFor(
      'every task to settle',
      async () => {
        const [rows] = await pool.query<RowDataPacket[]>('SELECT state, COUNT(*) AS n FROM tasks GROUP BY state');
        const c = Object.fromEntries(rows.map((r) => [r.state as string, Number(r.n)]));
        return (c.WAITING ?? 0) + (c.LEASED ?? 0) + (c.RUNNING ?? 0) === 0 ? c : null;
      },
      { timeout: 120_000, interval: 250 },
    );
    phase('settled');

    // Nothing lost, nothing duplicated: every acknowledged id is a final task, and there is no other.
    const [found] = await pool.query<RowDataPacket[]>(`SELECT id, state FROM tasks WHERE id IN (${ids.map(() => '?').join(',')})`, ids);
    expect(found.length).toBe(ids.length);
    expect(found.filter((r) => r.state !== 'SUCCEEDED' && r.state !== 'NEEDS_REVIEW')).toEqual([]);
    expect(await count('SELECT COUNT(*) AS n FROM tasks')).toBe(2 * HALF);
    expect(await count('SELECT COUNT(*) AS n FROM receipts')).toBe(2 * HALF);
    expect(await count('SELECT COUNT(*) AS n FROM tasks t WHERE NOT EXISTS (SELECT 1 FROM attempts a WHERE a.task_id = t.id)')).toBe(0);
    // Mutual exclusion, strictly increasing tokens, one SUCCEEDED attempt per task (history).
    expect((await checkHistory(pool)).violations).toEqual([]);
    // Permit accounting: counters equal the live attempts (none), no key held.
    await assertPermitInvariants(pool);
    expect(await count('SELECT active_attempts AS n FROM queues')).toBe(0);
    expect(await count('SELECT COUNT(*) AS n FROM resource_keys WHERE holder_attempt_id IS NOT NULL')).toBe(0);
    // The result stream's head is its last event (no event committed above the head).
    expect(
      await count(
        'SELECT COUNT(*) AS n FROM stream_heads h WHERE h.last_sequence <> (SELECT IFNULL(MAX(e.sequence), 0) FROM result_events e WHERE e.namespace_id = h.namespace_id)',
      ),
    ).toBe(0);

    // The workers' own view: per key no two handler runs overlapped; every keyed task that
    // succeeded has a finished run; each run carried its attempt's token (stable tokens).
    const { doneTasks, violations } = keyedRunOverlaps(workers);
    expect(violations).toEqual([]);
    const [keyedDone] = await pool.query<RowDataPacket[]>("SELECT id FROM tasks WHERE concurrency_key IS NOT NULL AND state = 'SUCCEEDED'");
    expect(keyedDone.length).toBeGreaterThan(HALF / 2);
    expect(keyedDone.map((r) => r.id as string).filter((id) => !doneTasks.has(id))).toEqual([]);
    const [tokens] = await pool.query<RowDataPacket[]>('SELECT id, concurrency_token FROM attempts WHERE concurrency_key IS NOT NULL');
    const tokenOf = new Map(tokens.map((r) => [r.id as string, String(r.concurrency_token)]));
    const wrongToken = workers.flatMap((w) => w.lines.filter((l) => l.ev === 'run' && l.key && tokenOf.get(l.attempt) !== l.token));
    expect(wrongToken).toEqual([]);

    // The failover really happened through the gateways: 503s during it, none afterwards; the
    // gateways now write through node2 (their heartbeat recorded it).
    expect(stats.unavailable + stats.fetchFailed).toBeGreaterThan(0);
    expect(gateways.every((g) => g.child.exitCode === null)).toBe(true);
    await waitFor(
      'both gateways to record node2',
      async () => {
        const [rows] = await pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM gateway_nodes WHERE wsrep_node_name = 'node2'");
        return Number(rows[0]!.n) === 2;
      },
      10_000,
    );

    // The surviving nodes hold the same rows (node3 read after it applied everything node2 has).
    const tables = 'tasks, attempts, receipts, resource_keys, queues, applications, result_events, stream_heads';
    const node3 = createPool(cluster!.dsn(cluster!.nodes[2]!.port, DB), { connectionLimit: 1 });
    try {
      const c3 = await node3.getConnection();
      try {
        // A read under wsrep_sync_wait waits until node3 applied everything committed before it.
        await c3.query('SET SESSION wsrep_sync_wait = 1');
        await c3.query('SELECT COUNT(*) FROM tasks');
        const [a] = await pool.query<RowDataPacket[]>(`CHECKSUM TABLE ${tables}`);
        const [b] = await c3.query<RowDataPacket[]>(`CHECKSUM TABLE ${tables}`);
        expect(b.map((r) => String(r.Checksum))).toEqual(a.map((r) => String(r.Checksum)));
      } finally {
        c3.release();
      }
    } finally {
      await node3.end();
    }

    phase('checks');
    const after503 = stats.unavailableAt.filter((x) => x > killedAt);
    const last503 = after503.length > 0 ? Math.max(...after503) : killedAt;
    const figures = {
      tasks: ids.length,
      keyed: ids.length / 2,
      succeeded: final.SUCCEEDED ?? 0,
      needs_review: final.NEEDS_REVIEW ?? 0,
      accepted_before_kill: before.created,
      http_503: stats.unavailable,
      fetch_failed: stats.fetchFailed,
      retries: stats.retries,
      retries_created: stats.createdOnRetry,
      retries_replayed: stats.replayed,
      last_503_after_kill_ms: last503 - killedAt,
      first_ok_after_switch_ms: stats.okAt.find((x) => x > switchedAt)! - switchedAt,
      submits_ok_between_kill_and_switch: stats.okAt.filter((x) => x > killedAt && x < switchedAt).length,
    };
    process.stdout.write(`galera failover figures ${JSON.stringify(figures)}\n`);
  }, 300_000);
});
