// One end-to-end scenario: producer processes submit over HTTP while SDK worker processes run the
// tasks (submit → assign → start → result committed), timed from the producers' start to the last
// result.ok a worker received. Progress comes from the workers (stdout) and producers (IPC), never
// from the database; its counters, the gateway's /metrics and /proc are read only before and after.
// A drain (spec.drain) commits its tasks with no worker connected, then times from the first
// worker's connection.
// Unless the warm-up share is 0, the same processes first run a warm-up of part of the task count
// the same way, drained before the measured window opens (bench/scenario-warmup.ts): every figure
// of the result is the window's, none includes a warm-up task.
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../server/db/pool.js';
import { dbDelta, dbPerUnit, dbStatus, metricDelta, scrapeMetrics, type DbPerUnit, type DbStatus } from './counters.js';
import { cpuPerTask, cpuSnapshot, type CpuPerTask } from './cpu.js';
import { startDbProfile, startGatewayProfile } from './db-profile.js';
import { spawnProducers, spawnWorkers, stopProducers, stopWorkers, type WorkerProc } from './procs.js';
import { ScenarioProgress } from './scenario-progress.js';
import { drainedWarmup, warmupCount } from './scenario-warmup.js';
import { percentile } from './stats.js';

export interface ScenarioSetup {
  url: string;
  token: string;
  /** The bench's own pool: status counters before/after, latency queries after a scenario. */
  pool: Pool;
  workers: number;
  capacity: number;
  producers: number;
  /** Concurrent requests per producer process: one-task requests, batch requests. */
  singleConcurrency: number;
  batchConcurrency: number;
  batchSize: number;
  mariadbPid: number | undefined;
  gatewayPid: number | undefined;
  /** The bench's own statements in a before/after status pair (subtracted). */
  overhead: DbStatus;
  /** Fail when neither submits nor results advance for this long. */
  stallMs: number;
  /** Share of each scenario's task count run as a warm-up before the window (0: measured cold). */
  warmupFraction: number;
}

export interface ScenarioSpec {
  name: string;
  count: number;
  /** null = unkeyed; else the number of distinct keys (task i gets key i % keys). */
  keys: number | null;
  submit: 'single' | 'batch';
  /** Submissions per second (paced); undefined = as fast as producers go. */
  rate?: number;
  /** Submit everything first, then start the workers and the clock (no producer load while the
   * tasks run): isolates the dispatch path, e.g. a hot key's turnover. Counters include submits. */
  preload?: boolean;
  /** A backlog's drain: everything committed with no worker connected, then the workers connect
   * fresh; clock, CPU and counters from the first connection (no submit in any figure). */
  drain?: boolean;
  /** Worker processes × capacity of this scenario (else the setup's). */
  workers?: number;
  capacity?: number;
  /** Attempts each worker holds beyond its capacity (WORKER_PREFETCH; default 0). */
  prefetch?: number;
}

export interface ScenarioResult {
  spec: ScenarioSpec;
  /** The scenario's queue (its warm-up tasks and its counted ones). */
  queueId: string;
  /** Tasks run (and drained) before the window, in none of the figures, and their seconds. */
  warmupTasks: number;
  warmupSeconds: number;
  /** Tasks counted: the window's, the divisor of every per-task figure. */
  tasks: number;
  seconds: number;
  tasksPerSec: number;
  db: DbPerUnit;
  /** Claim rounds per task (orbit_claim_rounds_total if the gateway has it, else
   * orbit_claim_seconds_count) and the share of rounds that granted nothing (null: no metric). */
  claimRoundsPerTask: number | null;
  claimRoundsSource: string;
  emptyClaimShare: number | null;
  /** The gateway's transactions and their round trips to the database, per task (null: the
   * gateway lacks orbit_db_transactions_total). */
  gatewayTransactionsPerTask: number | null;
  roundTripsPerTask: number | null;
  /** Mean frames per coalesced start/result transaction (orbit_frame_batch_size). */
  frameBatchMean: number | null;
  /** orbit_tasks_finished_total delta (a cross-check of the workers' count). */
  gatewayFinished: number | null;
  /** Frames the gateway sent to worker sessions and the socket writes they went out in, per task
   * (orbit_worker_frames_sent_total, orbit_worker_socket_flushes_total; null: no such metric). */
  workerFramesPerTask: number | null;
  workerWritesPerTask: number | null;
  cpuMsPerTask: CpuPerTask;
  submitToAssignMs: { p50: number; p99: number };
  resultToOkMs: { p50: number; p99: number };
  /** How many tasks the two latencies above were taken over (the window's: its task count). */
  latencySamples: { submitToAssign: number; resultToOk: number };
  /** The producers' HTTP response times (request sent → reply read, ms; every request). */
  httpResponseMs: { p50: number; p99: number };
  /** Submit transactions (coalesced batches: orbit_commit_seconds_count{op="POST /v1/tasks"}) per
   * task; its inverse is the requests per submit transaction on the one-request path. */
  submitTransactionsPerTask: number | null;
  /** Keyed: mean release → next grant of the same key (ms, database clock). */
  keyHandoffMs: number;
}

const now = () => performance.timeOrigin + performance.now();

async function createQueue(url: string, token: string, name: string): Promise<string> {
  const res = await fetch(url + '/v1/queues', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': name },
    body: JSON.stringify({ name, max_active_attempts: 100000, lease_seconds: 60 }),
  });
  const json = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`POST /v1/queues: ${res.status} ${JSON.stringify(json.error)}`);
  return json.data.queue.id as string;
}

/** True unless the gateway has no `POST /v1/tasks:batch` route (404/405 for an empty envelope). */
export async function batchEndpointAvailable(url: string, token: string): Promise<boolean> {
  const res = await fetch(url + '/v1/tasks:batch', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: [] }),
  });
  await res.arrayBuffer();
  return res.status !== 404 && res.status !== 405;
}

/** After a scenario: submit→assign of every first attempt (task created_at → attempt leased_at,
 * database clock) and, for keyed tasks, the mean gap from an attempt's finish to the grant of the
 * next token of its key, over the queue's tasks above `afterSeq` (the window's: the warm-up's are
 * at or below it). One read by queue; the pairing is done here (a self-join was slow). */
async function attemptLatencies(pool: Pool, queueId: string, afterSeq: number): Promise<{ assign: number[]; handoff: number }> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT a.attempt_no AS n, a.concurrency_key AS k, a.concurrency_token AS tok,
            TIMESTAMPDIFF(MICROSECOND, t.created_at, a.leased_at) AS assign_us,
            TIMESTAMPDIFF(MICROSECOND, '2000-01-01', a.leased_at) AS leased_us,
            TIMESTAMPDIFF(MICROSECOND, '2000-01-01', a.finished_at) AS finished_us
       FROM tasks t JOIN attempts a ON a.task_id = t.id WHERE t.queue_id = ? AND t.seq > ?`,
    [queueId, afterSeq],
  );
  const assign = rows.filter((r) => Number(r.n) === 1).map((r) => Number(r.assign_us) / 1000);
  const finished = new Map<string, number>();
  const id = (k: Buffer | string, tok: bigint) => `${Buffer.isBuffer(k) ? k.toString('hex') : k}/${tok}`;
  for (const r of rows) if (r.k !== null && r.finished_us !== null) finished.set(id(r.k, BigInt(r.tok)), Number(r.finished_us));
  const gaps: number[] = [];
  for (const r of rows) {
    if (r.k === null) continue;
    const prev = finished.get(id(r.k, BigInt(r.tok) - 1n));
    if (prev !== undefined) gaps.push((Number(r.leased_us) - prev) / 1000);
  }
  return { assign, handoff: gaps.length ? gaps.reduce((a, b) => a + b, 0) / gaps.length : NaN };
}

/** Waits for a backlog's submits, showing `line()` every second. */
async function awaitBacklog(producing: Promise<unknown>, progress: (line: string) => void, line: () => string): Promise<void> {
  const tick = setInterval(() => progress(line()), 1000);
  try {
    await producing;
  } finally {
    clearInterval(tick);
  }
}

export async function runScenario(s: ScenarioSetup, spec: ScenarioSpec, progress: (line: string) => void): Promise<ScenarioResult> {
  const name = `bench-${spec.name}-${Date.now()}`;
  const queueId = await createQueue(s.url, s.token, name);
  const warmupTasks = warmupCount(spec.count, s.warmupFraction);
  let workers: WorkerProc[] = [];
  const completed = () => workers.reduce((n, w) => n + w.completed, 0);
  const progressed = new ScenarioProgress();
  const startWorkers = async () => {
    workers = spawnWorkers(s.url, s.token, queueId, spec.workers ?? s.workers, spec.capacity ?? s.capacity, progressed.advanced, spec.prefetch);
    await Promise.all(workers.map((w) => w.ready));
  };
  const producers = spawnProducers(s.producers, progressed.advanced);
  const submitted = () => producers.reduce((n, p) => n + p.submitted, 0);
  /** Every producer's share of `count` tasks (idempotency and concurrency keys under `prefix`),
   * from a common start 50 ms ahead (paced from it). */
  const submit = (prefix: string, count: number) => {
    const startAt = now() + 50;
    const producing = Promise.all(
      producers.map((p, index) =>
        p.go({
          type: 'go',
          url: s.url,
          token: s.token,
          queueId,
          prefix,
          index,
          of: producers.length,
          count,
          keys: spec.keys,
          batch: spec.submit === 'batch' ? s.batchSize : 0,
          concurrency: spec.submit === 'batch' ? s.batchConcurrency : s.singleConcurrency,
          rate: spec.rate ?? null,
          startAt,
        }),
      ),
    );
    return { startAt, producing };
  };
  /** Waits until the workers have `target` results in all, showing `label`'s progress. */
  const until = async (label: string, target: () => number, feeding: Promise<unknown>, done: () => number) => {
    const tick = setInterval(() => progress(`${label}: submitted ${submitted()}/${target()}, results ${done()}`), 1000);
    try {
      await progressed.until(() => done() >= target(), {
        feeding,
        workers,
        stallMs: s.stallMs,
        name: label,
        where: () => `submitted ${submitted()}, results ${done()}`,
      });
    } finally {
      clearInterval(tick);
    }
  };
  // Every process tree of the scenario, read at one moment when the window opens (after the
  // warm-up is drained, before the producers start) and at one when the last result is in: all
  // groups share the window of the task count. Workers started after a preload are read from when
  // they are connected (their start-up is no task's cost).
  const groups = () => ({
    mariadbd: [s.mariadbPid],
    gateway: [s.gatewayPid],
    workers: workers.map((w) => w.child.pid),
    producers: producers.map((p) => p.child.pid),
  });
  // Preloaded and drained windows start their workers after the submits.
  const late = spec.preload || spec.drain;
  try {
    if (!late || warmupTasks > 0) await startWorkers();
    await Promise.all(producers.map((p) => p.ready));

    // The warm-up: the same submits, claims and results in the same processes, under its own keys
    // (`…-warmup/<i>`), drained before the window: its tasks are none of the window's figures.
    let warmupSeconds = 0;
    let afterSeq = 0;
    if (warmupTasks > 0) {
      const w = submit(`${name}-warmup`, warmupTasks);
      await until(`${spec.name} warm-up`, () => warmupTasks, w.producing, completed);
      // Its producers' jobs ended too (their last replies and `done` messages can trail the
      // workers' results): the window's jobs start on idle producers (procs.ts: one job at a time).
      await w.producing;
      warmupSeconds = (Math.max(...workers.map((x) => x.lastResultAt)) - w.startAt) / 1000;
      afterSeq = await drainedWarmup(s.pool, queueId, warmupTasks);
      // A preloaded or drained window needs no worker while it submits: its workers start afterwards, fresh
      // (only the gateway, the database and the producers are warm there).
      if (late) {
        await stopWorkers(workers);
        workers = [];
      }
    }
    // Results each worker had before the window: its latency list starts with theirs.
    const before = new Map(workers.map((w) => [w, w.completed]));
    const inWindow = () => workers.reduce((n, w) => n + w.completed - (before.get(w) ?? 0), 0);

    // A drain's backlog is committed before its window opens.
    const backlog = spec.drain ? submit(name, spec.count) : null;
    if (backlog) await awaitBacklog(backlog.producing, progress, () => `${spec.name}: backlog ${submitted()}/${spec.count}, no worker connected`);

    const profile = await startDbProfile(s.pool, s.mariadbPid, spec.name);
    const gatewayProfile = await startGatewayProfile(s.gatewayPid, spec.name);
    const dbBefore = await dbStatus(s.pool);
    const mBefore = await scrapeMetrics(s.url);
    const cpu0 = cpuSnapshot(groups());

    const { startAt, producing } = backlog ?? submit(name, spec.count);
    let clock = startAt;
    if (spec.preload) {
      await producing;
      await startWorkers();
      cpu0.workers = cpuSnapshot({ workers: groups().workers }).workers;
      clock = now();
    } else if (spec.drain) {
      // Each worker reports its connection's time and its CPU then: none of its start-up counts.
      await startWorkers();
      clock = Math.min(...workers.map((w) => w.connectedAt));
      cpu0.workers = workers.reduce((a, w) => a + w.cpuMsAtConnect, 0);
    }
    await until(spec.name, () => spec.count, producing, inWindow);
    const end = Math.max(...workers.map((w) => w.lastResultAt));
    const cpu1 = cpuSnapshot(groups());
    const mAfter = await scrapeMetrics(s.url);
    const db = dbPerUnit(dbDelta(dbBefore, await dbStatus(s.pool), s.overhead), spec.count);
    await profile?.stop(spec.count);
    await gatewayProfile?.stop();

    await stopWorkers(workers);
    await stopProducers(producers);

    const cpu = cpuPerTask(
      {
        mariadbd: cpu1.mariadbd - cpu0.mariadbd,
        gateway: cpu1.gateway - cpu0.gateway,
        workers: cpu1.workers - cpu0.workers,
        producers: cpu1.producers - cpu0.producers,
      },
      spec.count,
    );

    const rounds = metricDelta(mBefore, mAfter, 'orbit_claim_rounds_total');
    const empty = metricDelta(mBefore, mAfter, 'orbit_claim_rounds_total', 'result="empty"');
    const claimSeconds = metricDelta(mBefore, mAfter, 'orbit_claim_seconds_count');
    const claims = rounds ?? claimSeconds;
    const txs = metricDelta(mBefore, mAfter, 'orbit_db_transactions_total');
    const trips = metricDelta(mBefore, mAfter, 'orbit_db_transaction_round_trips_total');
    const batchSum = metricDelta(mBefore, mAfter, 'orbit_frame_batch_size_sum');
    const batchCount = metricDelta(mBefore, mAfter, 'orbit_frame_batch_size_count');
    const framesSent = metricDelta(mBefore, mAfter, 'orbit_worker_frames_sent_total');
    const flushes = metricDelta(mBefore, mAfter, 'orbit_worker_socket_flushes_total');
    const submitTxs = metricDelta(mBefore, mAfter, 'orbit_commit_seconds_count', 'op="POST /v1/tasks"');

    const lat = await attemptLatencies(s.pool, queueId, afterSeq);
    // A worker prints its handler-return → result.ok latencies at exit, in the order of its results.
    const results = workers.flatMap((w) => w.latencies.slice(before.get(w) ?? 0));
    const responses = producers.flatMap((p) => p.responseMs);
    const seconds = (end - clock) / 1000;
    return {
      spec,
      queueId,
      warmupTasks,
      warmupSeconds,
      tasks: spec.count,
      seconds,
      tasksPerSec: spec.count / seconds,
      db,
      claimRoundsPerTask: claims === null ? null : claims / spec.count,
      claimRoundsSource: rounds !== null ? 'orbit_claim_rounds_total' : claimSeconds !== null ? 'orbit_claim_seconds_count' : 'none',
      emptyClaimShare: rounds !== null && rounds > 0 ? (empty ?? 0) / rounds : null,
      gatewayTransactionsPerTask: txs === null ? null : txs / spec.count,
      roundTripsPerTask: trips === null ? null : trips / spec.count,
      frameBatchMean: batchSum !== null && batchCount ? batchSum / batchCount : null,
      gatewayFinished: metricDelta(mBefore, mAfter, 'orbit_tasks_finished_total'),
      workerFramesPerTask: framesSent === null ? null : framesSent / spec.count,
      workerWritesPerTask: flushes === null ? null : flushes / spec.count,
      cpuMsPerTask: cpu,
      submitToAssignMs: { p50: percentile(lat.assign, 50), p99: percentile(lat.assign, 99) },
      resultToOkMs: { p50: percentile(results, 50), p99: percentile(results, 99) },
      latencySamples: { submitToAssign: lat.assign.length, resultToOk: results.length },
      httpResponseMs: { p50: percentile(responses, 50), p99: percentile(responses, 99) },
      submitTransactionsPerTask: submitTxs === null ? null : submitTxs / spec.count,
      keyHandoffMs: lat.handoff,
    };
  } finally {
    await stopWorkers(workers);
    await stopProducers(producers);
  }
}
