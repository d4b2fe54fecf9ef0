// Three gateway nodes on one database, six SDK worker processes (two per node), 3 000 tasks (half
// keyed over 50 keys); workers and a gateway are killed with SIGKILL and restarted mid-run. At the
// end every task is terminal or in review with its history, no task succeeded twice, per-key
// attempts never overlapped and their tokens strictly increased, and every permit counter equals
// the live attempts (zero).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { endOfFileChecks } from './support/fixture.js';
import { spawnWorker, type WorkerProcess } from './support/workers.js';
import { submitMany, taskBodies } from './support/bulk.js';
import { checkHistory, keyedRunOverlaps } from './support/history.js';
import { freePort } from '../server/mariadb/embedded-mariadb.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { waitFor } from './support/wait.js';

let db: TestDb;
let t: CredentialsFile;
const gateways: GatewayProcess[] = [];
const ports: number[] = [];

beforeAll(async () => {
  db = await createTestDb();
  t = await newTenant(db);
  // Short leases so that attempts of killed workers are recovered within seconds.
  await db.pool.query('UPDATE queues SET lease_seconds = 5');
  for (let i = 0; i < 3; i++) {
    ports.push(await freePort());
    gateways.push(await startGateway(db.dsn, { ORBIT_NODE_ID: `node-${i}` }, ports[i]));
  }
});
afterAll(async () => {
  await endOfFileChecks(db);
});

async function counts(): Promise<Record<string, number>> {
  const [rows] = await db.pool.query<RowDataPacket[]>('SELECT state, COUNT(*) AS n FROM tasks GROUP BY state');
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

describe('three nodes, kill -9 of workers and a gateway', () => {
  it('runs 3 000 tasks with every invariant intact', async () => {
    const url = (i: number) => `http://127.0.0.1:${ports[i % 3]}`;
    const workers: WorkerProcess[] = [];
    const env = { WORKER_CAPACITY: '16', WORKER_DELAY_MS: '4', WORKER_LOG_RUNS: '1' };
    for (let i = 0; i < 6; i++) workers.push(spawnWorker(url(i), t.token, [t.queue_id], env));
    await Promise.all(workers.map((w) => w.ready));

    const N = 3000;
    const tasks = taskBodies(t.queue_id, N, (i) => (i % 2 === 0 ? `object/${i % 100}` : undefined));
    let rr = 0;
    const submitting = submitMany(() => url(rr++), t.token, tasks, { concurrency: 12 });

    // Chaos once a third of the work is done.
    await waitFor('a third of the tasks', async () => ((await counts()).SUCCEEDED ?? 0) >= N / 3, 120_000);
    // The killed workers stay in the worker-side check below: a run they never finished lasted
    // until their kill (the handler prints 'done' before its result is sent).
    const killed = new Map<WorkerProcess, number>();
    const kill = async (w: WorkerProcess) => {
      killed.set(w, Date.now());
      await w.kill9();
    };
    await kill(workers[0]!);
    await kill(workers[3]!);
    const everyWorker = [...workers];
    workers[0] = spawnWorker(url(0), t.token, [t.queue_id], env);
    await gateways[1]!.kill9();
    gateways[1] = await startGateway(db.dsn, { ORBIT_NODE_ID: 'node-1b' }, ports[1]);
    workers[3] = spawnWorker(url(2), t.token, [t.queue_id], env);
    everyWorker.push(workers[0]!, workers[3]!);

    const ids = await submitting;
    expect(new Set(ids).size).toBe(N);
    const final = await waitFor(
      'every task to settle',
      async () => {
        const c = await counts();
        const live = (c.WAITING ?? 0) + (c.LEASED ?? 0) + (c.RUNNING ?? 0);
        return live === 0 ? c : null;
      },
      { timeout: 120_000, interval: 250 },
    );
    expect((final.SUCCEEDED ?? 0) + (final.NEEDS_REVIEW ?? 0)).toBe(N);

    const h = await checkHistory(db.pool);
    expect(h.violations).toEqual([]);
    // Every task has its full history: each terminal or review task has at least one attempt.
    const [orphans] = await db.pool.query<RowDataPacket[]>(
      'SELECT COUNT(*) AS n FROM tasks t WHERE NOT EXISTS (SELECT 1 FROM attempts a WHERE a.task_id = t.id)',
    );
    expect(Number(orphans[0]!.n)).toBe(0);
    const [q] = await db.pool.query<RowDataPacket[]>('SELECT active_attempts FROM queues WHERE id = ?', [t.queue_id]);
    expect(Number(q[0]!.active_attempts)).toBe(0);
    const [a] = await db.pool.query<RowDataPacket[]>('SELECT active_attempts, unfinished_tasks FROM applications WHERE id = ?', [t.application_id]);
    expect(Number(a[0]!.active_attempts)).toBe(0);
    expect(Number(a[0]!.unfinished_tasks)).toBe(final.NEEDS_REVIEW ?? 0);
    const [held] = await db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM resource_keys WHERE holder_attempt_id IS NOT NULL');
    expect(Number(held[0]!.n)).toBe(0);
    // The run turned keys over (one holder after another, under the kills above): the history
    // checker's token and exclusion invariants held across those turnovers.
    const [turned] = await db.pool.query<RowDataPacket[]>(
      'SELECT COUNT(*) AS n FROM (SELECT 1 FROM attempts WHERE concurrency_key IS NOT NULL GROUP BY namespace_id, concurrency_key HAVING COUNT(*) > 1) k',
    );
    expect(Number(turned[0]!.n)).toBeGreaterThan(0);

    // Worker-side view, every worker process of the run (killed ones too): per key, no two handler
    // runs overlapped (closed intervals).
    const { doneTasks, violations } = keyedRunOverlaps(everyWorker, killed);
    // The check saw the keyed runs: every keyed task that succeeded has a finished run in a log.
    const [keyedDone] = await db.pool.query<RowDataPacket[]>("SELECT id FROM tasks WHERE concurrency_key IS NOT NULL AND state = 'SUCCEEDED'");
    expect(keyedDone.length).toBeGreaterThan(N / 4);
    expect(keyedDone.map((r) => r.id as string).filter((id) => !doneTasks.has(id))).toEqual([]);
    expect(violations).toEqual([]);
  }, 300_000);
});
