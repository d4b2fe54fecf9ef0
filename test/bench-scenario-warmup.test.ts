// The bench's scenario run with its warm-up (bench/scenario.ts, bench/scenario-warmup.ts) on real
// processes: a gateway process, the bench's SDK worker processes and producer processes, the test
// database. What is checked is the counting, never a speed: the warm-up's tasks ran in the same
// processes and were finished before the window's first task was created, and no per-task figure
// counts them (the gateway's finished counter over the window, the latency samples).
// A drain window opens after its backlog is committed: its submits are in none of its figures.
import type { RowDataPacket } from 'mysql2/promise';
import { describe, expect, it } from 'vitest';
import { runScenario, type ScenarioSetup, type ScenarioSpec } from '../bench/scenario.js';
import { useGatewayFixture } from './support/fixture.js';

describe('bench scenario warm-up', () => {
  const f = useGatewayFixture();
  const run = (warmupFraction: number, spec: ScenarioSpec) => {
    const setup: ScenarioSetup = {
      url: f.gw.url,
      token: f.t.token,
      pool: f.db.pool,
      workers: 2,
      capacity: 8,
      producers: 2,
      singleConcurrency: 4,
      batchConcurrency: 2,
      batchSize: 5,
      mariadbPid: undefined,
      gatewayPid: f.gw.child.pid,
      overhead: new Map(),
      stallMs: 30_000,
      warmupFraction,
    };
    return runScenario(setup, spec, () => {});
  };

  /** The queue's tasks in insertion order, each with its key and its attempt's times. */
  const tasksOf = async (queueId: string) => {
    const [rows] = await f.db.pool.query<RowDataPacket[]>(
      `SELECT t.seq, t.state, CAST(t.concurrency_key AS CHAR) AS k, UNIX_TIMESTAMP(t.created_at) AS created, UNIX_TIMESTAMP(MAX(a.finished_at)) AS finished, COUNT(a.id) AS attempts
         FROM tasks t LEFT JOIN attempts a ON a.task_id = t.id WHERE t.queue_id = ? GROUP BY t.id ORDER BY t.seq`,
      [queueId],
    );
    return rows;
  };

  /** The first `warmup` tasks (by seq) all finished before the first of the rest was created. */
  const expectDrainedBeforeWindow = (rows: RowDataPacket[], warmup: number) => {
    const warm = rows.slice(0, warmup);
    const window = rows.slice(warmup);
    const lastWarmFinish = Math.max(...warm.map((r) => Number(r.finished)));
    const firstWindowCreate = Math.min(...window.map((r) => Number(r.created)));
    expect(lastWarmFinish).toBeLessThanOrEqual(firstWindowCreate);
  };

  it("runs a drained warm-up of one-task requests first and counts only the window's tasks", async () => {
    const r = await run(0.5, { name: 'warm-unkeyed', count: 40, keys: null, submit: 'single' });
    expect(r.warmupTasks).toBe(20);
    expect(r.tasks).toBe(40);
    // The gateway's own count over the window: the warm-up's 20 results came before it opened.
    expect(r.gatewayFinished).toBe(40);
    expect(r.latencySamples).toEqual({ submitToAssign: 40, resultToOk: 40 });
    const rows = await tasksOf(r.queueId);
    expect(rows).toHaveLength(60);
    expect(rows.every((x) => x.state === 'SUCCEEDED' && Number(x.attempts) === 1)).toBe(true);
    expectDrainedBeforeWindow(rows, 20);
  });

  it('warms a keyed batch scenario up under keys of its own', async () => {
    const r = await run(1 / 3, { name: 'warm-keyed', count: 30, keys: 3, submit: 'batch' });
    expect(r.warmupTasks).toBe(10);
    expect(r.gatewayFinished).toBe(30);
    expect(r.latencySamples).toEqual({ submitToAssign: 30, resultToOk: 30 });
    const rows = await tasksOf(r.queueId);
    expect(rows).toHaveLength(40);
    expect(rows.every((x) => x.state === 'SUCCEEDED')).toBe(true);
    expectDrainedBeforeWindow(rows, 10);
    // The warm-up's keys are not the window's: a window key's first grant is in the window.
    const keys = (from: RowDataPacket[]) => new Set(from.map((x) => String(x.k)));
    const warmKeys = keys(rows.slice(0, 10));
    const windowKeys = keys(rows.slice(10));
    expect(warmKeys.size).toBe(3);
    expect(windowKeys.size).toBe(3);
    expect([...warmKeys].every((k) => k.includes('-warmup/') && !windowKeys.has(k))).toBe(true);
  });

  it('drains a backlog committed with no worker connected and counts none of its submits', async () => {
    const r = await run(0.5, { name: 'drain', count: 60, keys: null, submit: 'batch', drain: true, workers: 1, capacity: 24 });
    expect(r.warmupTasks).toBe(30);
    expect(r.gatewayFinished).toBe(60);
    expect(r.latencySamples).toEqual({ submitToAssign: 60, resultToOk: 60 });
    // The window opens after the backlog's submits: none of its submit transactions is counted.
    expect(r.submitTransactionsPerTask).toBe(0);
    const rows = await tasksOf(r.queueId);
    expect(rows).toHaveLength(90);
    expect(rows.every((x) => x.state === 'SUCCEEDED')).toBe(true);
    expectDrainedBeforeWindow(rows, 30);
    // The whole backlog was committed before its first task was leased, all to one fresh worker.
    const [leases] = await f.db.pool.query<RowDataPacket[]>(
      `SELECT MAX(t.created_at) AS last_created, MIN(a.leased_at) AS first_leased, COUNT(DISTINCT a.worker_id) AS workers
         FROM tasks t JOIN attempts a ON a.task_id = t.id WHERE t.queue_id = ? AND t.seq > ?`,
      [r.queueId, Number(rows[29]!.seq)],
    );
    expect(new Date(leases[0]!.last_created).getTime()).toBeLessThanOrEqual(new Date(leases[0]!.first_leased).getTime());
    expect(Number(leases[0]!.workers)).toBe(1);
  });

  it('measures cold with no warm-up (--no-warmup)', async () => {
    const r = await run(0, { name: 'cold-unkeyed', count: 20, keys: null, submit: 'single' });
    expect(r.warmupTasks).toBe(0);
    expect(r.gatewayFinished).toBe(20);
    expect(r.latencySamples).toEqual({ submitToAssign: 20, resultToOk: 20 });
    expect(await tasksOf(r.queueId)).toHaveLength(20);
  });
});
