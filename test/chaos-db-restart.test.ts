// A MariaDB restart (SIGKILL of mysqld, then start on the same port and data) in the middle of a
// load of submits and SDK workers: the pool recovers, producers retry with the same
// Idempotency-Key, workers reconnect and resume, and at the end every task succeeded exactly once
// with no duplicate task. Runs on its own durable server (flush at every commit).
import { beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { spawnWorker } from './support/workers.js';
import { submitMany, taskBodies } from './support/bulk.js';
import { checkHistory } from './support/history.js';
import { waitFor } from './support/wait.js';
import { useOwnServer } from './support/own-server.js';

const own = useOwnServer('orbit-restart-');

let gw: GatewayProcess;

beforeAll(async () => {
  gw = await startGateway(own.dsn());
});

async function succeeded(): Promise<number> {
  try {
    const [r] = await own.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM tasks WHERE state = 'SUCCEEDED'");
    return Number(r[0]!.n);
  } catch {
    return -1;
  }
}

describe('database restart mid-load', () => {
  it('loses and duplicates nothing', async () => {
    const workers = [0, 1].map(() => spawnWorker(gw.url, own.t.token, [own.t.queue_id], { WORKER_CAPACITY: '8', WORKER_DELAY_MS: '3' }));
    await Promise.all(workers.map((w) => w.ready));
    const N = 800;
    const tasks = taskBodies(own.t.queue_id, N, (i) => (i % 3 === 0 ? `k${i % 7}` : undefined));
    const submitting = submitMany(gw.url, own.t.token, tasks, { concurrency: 8 });
    await waitFor('150 tasks done', async () => (await succeeded()) >= 150, 60_000);
    own.server.child.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 1000));
    await own.server.restart();
    const ids = await submitting;
    expect(new Set(ids).size).toBe(N);
    // Attempts running while the database was down may have outlived their lease: they are in
    // review, never silently dropped; everything else succeeded.
    await waitFor(
      'all tasks settled',
      async () => {
        const [r] = await own.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM tasks WHERE state IN ('WAITING','LEASED','RUNNING')");
        return Number(r[0]!.n) === 0;
      },
      { timeout: 90_000, interval: 250 },
    );
    const [rows] = await own.pool.query<RowDataPacket[]>('SELECT state, COUNT(*) AS n FROM tasks GROUP BY state');
    const byState = Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
    expect((byState.SUCCEEDED ?? 0) + (byState.NEEDS_REVIEW ?? 0)).toBe(N);
    const [total] = await own.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM tasks');
    expect(Number(total[0]!.n)).toBe(N);
    const h = await checkHistory(own.pool);
    expect(h.violations).toEqual([]);
    const [q] = await own.pool.query<RowDataPacket[]>('SELECT active_attempts FROM queues');
    expect(Number(q[0]!.active_attempts)).toBe(0);
    expect(gw.child.exitCode).toBeNull();
  }, 240_000);
});
