// Workflow scenarios (docs/benchmarks.md "Workflows"): runs of one published workflow started
// over HTTP while SDK worker processes run their step tasks; every advancement (a finished step, its
// children decided and their tasks created) commits inside the transaction of the result that
// finished the step, so a run's whole cost is in these counters.
//   workflow-chain-3     a → b → c, one task each: runs per second of a 3-step chain;
//   workflow-fanout-100  split → each (for_each over split's 100-element array): 101 tasks a run.
// Measured like the task scenarios (bench/scenario.ts): database status counters, the gateway's
// /metrics and /proc CPU read once before and once after; the end is detected from the workers'
// progress lines (every task of every run reported done), never by polling the database. Reported
// per run, per step and per task, with CPU in ms and in u. The run states and latencies (start →
// finished, database clock) are read after the window.
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../server/db/pool.js';
import { dbDelta, dbPerUnit, dbStatus, metricDelta, scrapeMetrics, type DbPerUnit, type DbStatus } from './counters.js';
import { cpuPerTask, cpuSnapshot, uPerTask, type CpuPerTask } from './cpu.js';
import { spawnWorkers, stopWorkers, type WorkerProc } from './procs.js';
import { ScenarioProgress } from './scenario-progress.js';
import { api as post } from './scheduled-load.js';
import { fmt, percentile, round } from './stats.js';

export interface WorkflowLoadSetup {
  url: string;
  token: string;
  pool: Pool;
  workers: number;
  capacity: number;
  mariadbPid: number | undefined;
  gatewayPid: number | undefined;
  overhead: DbStatus;
  stallMs: number;
}

export interface WorkflowLoadSpec {
  name: 'workflow-chain-3' | 'workflow-fanout-100';
  runs: number;
  /** Run starts in flight at once (POST /v1/workflows/{id}/runs from this process). */
  concurrency: number;
}

export interface WorkflowLoadResult {
  spec: WorkflowLoadSpec;
  steps: number;
  tasks: number;
  seconds: number;
  runsPerSec: number;
  tasksPerSec: number;
  /** Final states of the runs (all SUCCEEDED unless something is wrong). */
  states: Record<string, number>;
  /** Start → finished of each run (database clock). */
  runMs: { p50: number; p99: number };
  perRun: DbPerUnit;
  perStep: DbPerUnit;
  perTask: DbPerUnit;
  gatewayTransactionsPerRun: number | null;
  /** How each step's task reached a worker, per step (gateway /metrics): tasks granted by claim
   * rounds, rounds that granted something and empty ones. */
  perStepDispatch: { claimed: number | null; roundsGranted: number | null; roundsEmpty: number | null };
  cpuMsPerRun: CpuPerTask;
  cpuMsPerTask: CpuPerTask;
  /** Seconds from the window's start to the last run start accepted (the backlog builds while
   * starts outpace the workers). */
  startsDoneSeconds: number;
  /** Per step key: p50 / p99 of the task's wait from creation to its first lease (database clock). */
  queueWaitMs: Record<string, { p50: number; p99: number }>;
}

/** The published steps of each scenario; every task runs the worker's handler `h`, and a step
 * whose params carry `items: N` returns an N-element array (bench/worker-proc.ts): the fan-out's source. */
function shape(name: WorkflowLoadSpec['name'], queueId: string): { steps: unknown[]; tasksPerRun: number } {
  const task = (params: unknown = {}) => ({ queue_id: queueId, handler: 'h', handler_version: 'v1', payload_version: 'v1', params });
  if (name === 'workflow-chain-3')
    return {
      steps: [
        { key: 'a', task: task() },
        { key: 'b', after: ['a'], task: task() },
        { key: 'c', after: ['b'], task: task() },
      ],
      tasksPerRun: 3,
    };
  return {
    steps: [
      { key: 'split', task: task({ items: 100 }) },
      { key: 'each', after: ['split'], for_each: 'split', task: task() },
    ],
    tasksPerRun: 101,
  };
}

const ms = (v: string) => Date.parse(String(v).replace(' ', 'T') + 'Z');

export async function runWorkflowLoad(s: WorkflowLoadSetup, spec: WorkflowLoadSpec, progress: (l: string) => void): Promise<WorkflowLoadResult> {
  const tag = `bench-${spec.name}-${Date.now().toString(36)}`;
  const queueId = (await post(s.url, s.token, '/v1/queues', { name: tag, max_active_attempts: 100000, lease_seconds: 60 }, `${tag}-queue`)).queue.id as string;
  const { steps, tasksPerRun } = shape(spec.name, queueId);
  const wf = (await post(s.url, s.token, '/v1/workflows', { name: tag, version: { steps } }, `${tag}-workflow`)).workflow;
  const expected = spec.runs * tasksPerRun;
  const progressed = new ScenarioProgress();
  const workers: WorkerProc[] = spawnWorkers(s.url, s.token, queueId, s.workers, s.capacity, progressed.advanced);
  const completed = () => workers.reduce((n, w) => n + w.completed, 0);
  try {
    await Promise.all(workers.map((w) => w.ready));
    const dbBefore = await dbStatus(s.pool);
    const mBefore = await scrapeMetrics(s.url);
    const groups = () => ({ mariadbd: [s.mariadbPid], gateway: [s.gatewayPid], workers: workers.map((w) => w.child.pid) });
    const cpu0 = cpuSnapshot(groups());
    const self0 = process.cpuUsage();
    const t0 = performance.timeOrigin + performance.now();

    let next = 0;
    let started = 0;
    let startsDone = t0;
    const starting = Promise.all(
      Array.from({ length: Math.min(spec.concurrency, spec.runs) }, async () => {
        while (next < spec.runs) {
          const i = next++;
          await post(s.url, s.token, `/v1/workflows/${wf.id}/runs`, { input: { i } }, `${tag}-run-${i}`);
          started++;
          startsDone = performance.timeOrigin + performance.now();
          progressed.advanced();
        }
      }),
    );
    const tick = setInterval(() => progress(`${spec.name}: started ${started}/${spec.runs} runs, tasks done ${completed()}/${expected}`), 1000);
    try {
      await progressed.until(() => completed() >= expected, {
        feeding: starting,
        workers,
        stallMs: s.stallMs,
        name: spec.name,
        where: () => `started ${started}, tasks done ${completed()}/${expected}`,
      });
      await starting;
    } finally {
      clearInterval(tick);
    }
    const end = Math.max(...workers.map((w) => w.lastResultAt));
    const cpu1 = cpuSnapshot(groups());
    const self = process.cpuUsage(self0);
    const mAfter = await scrapeMetrics(s.url);
    const delta = dbDelta(dbBefore, await dbStatus(s.pool), s.overhead);

    const [runs] = await s.pool.query<RowDataPacket[]>('SELECT state, created_at, finished_at FROM workflow_runs WHERE workflow_id = ?', [wf.id]);
    const states: Record<string, number> = {};
    const lat: number[] = [];
    for (const r of runs) {
      states[r.state] = (states[r.state] ?? 0) + 1;
      if (r.finished_at) lat.push(ms(r.finished_at) - ms(r.created_at));
    }
    // Create → first lease per step: a child's task waiting for a claim round (or the sweeper)
    // longer than a root's would show here; equal waits mean one FIFO backlog for every step.
    const [waits] = await s.pool.query<RowDataPacket[]>(
      `SELECT t.workflow_step AS step, TIMESTAMPDIFF(MICROSECOND, t.created_at, a.leased_at) / 1000 AS ms FROM workflow_runs r
         JOIN tasks t ON t.workflow_run_id = r.id JOIN attempts a ON a.task_id = t.id AND a.attempt_no = 1 WHERE r.workflow_id = ?`,
      [wf.id],
    );
    const byStep = new Map<string, number[]>();
    for (const w of waits) byStep.set(String(w.step), [...(byStep.get(String(w.step)) ?? []), Number(w.ms)]);
    const queueWaitMs = Object.fromEntries([...byStep].sort().map(([k, v]) => [k, { p50: percentile(v, 50), p99: percentile(v, 99) }]));
    const used = {
      mariadbd: cpu1.mariadbd - cpu0.mariadbd,
      gateway: cpu1.gateway - cpu0.gateway,
      workers: cpu1.workers - cpu0.workers,
      // The run starts come from this process: its CPU over the window (it does nothing else then).
      producers: (self.user + self.system) / 1000,
    };
    const seconds = (end - t0) / 1000;
    const txs = metricDelta(mBefore, mAfter, 'orbit_db_transactions_total');
    return {
      spec,
      steps: steps.length,
      tasks: expected,
      seconds,
      runsPerSec: spec.runs / seconds,
      tasksPerSec: expected / seconds,
      states,
      runMs: { p50: percentile(lat, 50), p99: percentile(lat, 99) },
      perRun: dbPerUnit(delta, spec.runs),
      perStep: dbPerUnit(delta, spec.runs * steps.length),
      perTask: dbPerUnit(delta, expected),
      gatewayTransactionsPerRun: txs === null ? null : txs / spec.runs,
      perStepDispatch: (() => {
        const per = (v: number | null) => (v === null ? null : v / (spec.runs * steps.length));
        return {
          claimed: per(metricDelta(mBefore, mAfter, 'orbit_tasks_assigned_total')),
          roundsGranted: per(metricDelta(mBefore, mAfter, 'orbit_claim_rounds_total', 'result="granted"')),
          roundsEmpty: per(metricDelta(mBefore, mAfter, 'orbit_claim_rounds_total', 'result="empty"')),
        };
      })(),
      startsDoneSeconds: (startsDone - t0) / 1000,
      queueWaitMs,
      cpuMsPerRun: cpuPerTask(used, spec.runs),
      cpuMsPerTask: cpuPerTask(used, expected),
    };
  } finally {
    await stopWorkers(workers);
  }
}

/** One JSON object per scenario for `--json` (u: the run's baseline unit, µs). */
export function workflowLoadJson(r: WorkflowLoadResult, unitUs: number) {
  const u = uPerTask(r.cpuMsPerTask, unitUs);
  const cpu = (c: CpuPerTask) => Object.fromEntries(Object.entries(c).map(([k, v]) => [k, round(v, 3)]));
  return {
    name: r.spec.name,
    runs: r.spec.runs,
    steps_per_run: r.steps,
    tasks: r.tasks,
    seconds: round(r.seconds),
    runs_per_s: round(r.runsPerSec, 2),
    tasks_per_s: round(r.tasksPerSec, 1),
    run_states: r.states,
    run_ms: { p50: round(r.runMs.p50, 1), p99: round(r.runMs.p99, 1) },
    statements_per_run: round(r.perRun.statements, 1),
    statements_per_step: round(r.perStep.statements, 2),
    statements_per_task: round(r.perTask.statements, 2),
    commits_per_step: round(r.perStep.commits, 2),
    statements_per_step_by_kind: Object.fromEntries(Object.entries(r.perStep.breakdown).map(([k, v]) => [k, round(v, 2)])),
    row_lock_waits_per_step: round(r.perStep.rowLockWaits, 3),
    gateway_transactions_per_run: round(r.gatewayTransactionsPerRun),
    starts_done_s: round(r.startsDoneSeconds, 1),
    queue_wait_ms: Object.fromEntries(Object.entries(r.queueWaitMs).map(([k, v]) => [k, { p50: round(v.p50, 1), p99: round(v.p99, 1) }])),
    dispatch_per_step: Object.fromEntries(Object.entries(r.perStepDispatch).map(([k, v]) => [k, v === null ? null : round(v, 3)])),
    cpu_ms_per_run: cpu(r.cpuMsPerRun),
    cpu_ms_per_task: cpu(r.cpuMsPerTask),
    cpu_u_per_task: round(u.total, 2),
    u_per_task: { db: round(u.db, 2), gateway: round(u.gateway, 2), workers: round(u.workers, 2), producers: round(u.producers, 2) },
  };
}

export function workflowLoadText(rs: WorkflowLoadResult[], unitUs: number): string {
  if (rs.length === 0) return '';
  const lines = [
    '| workflow scenario | runs | runs/s | tasks/s | run start→finish p50 / p99 ms | statements per run / step / task | commits per step | CPU ms per run: db / gateway / workers / starts | CPU u per task | final states |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rs.map((r) => {
      const c = r.cpuMsPerRun;
      return (
        `| ${r.spec.name} | ${fmt(r.spec.runs)} | ${fmt(r.runsPerSec, 1)} | ${fmt(r.tasksPerSec)} | ${fmt(r.runMs.p50)} / ${fmt(r.runMs.p99)} | ` +
        `${fmt(r.perRun.statements, 1)} / ${fmt(r.perStep.statements, 1)} / ${fmt(r.perTask.statements, 1)} | ${fmt(r.perStep.commits, 2)} | ` +
        `${[c.mariadbd, c.gateway, c.workers, c.producers].map((v) => fmt(v, 2)).join(' / ')} | ${fmt(uPerTask(r.cpuMsPerTask, unitUs).total, 1)} | ` +
        `${Object.entries(r.states)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')} |`
      );
    }),
  ];
  const d = (v: number | null) => (v === null ? 'n/a' : fmt(v, 2));
  lines.push(
    '',
    '| workflow scenario | per step: tasks granted by claim rounds | claim rounds granted / empty | last run start at s | task create→lease p50 / p99 ms by step |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rs.map(
      (r) =>
        `| ${r.spec.name} | ${d(r.perStepDispatch.claimed)} | ${d(r.perStepDispatch.roundsGranted)} / ${d(r.perStepDispatch.roundsEmpty)} | ` +
        `${fmt(r.startsDoneSeconds, 1)} of ${fmt(r.seconds, 1)} | ${Object.entries(r.queueWaitMs)
          .map(([k, v]) => `${k} ${fmt(v.p50)} / ${fmt(v.p99)}`)
          .join(', ')} |`,
    ),
  );
  return lines.join('\n') + '\n';
}
