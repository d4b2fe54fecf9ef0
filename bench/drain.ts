// The drain scenarios (a backlog committed with no worker connected, then drained: what a user
// meets after an outage, a deploy or a bulk import) and their report next to graphile-worker's
// drain of the same backlog in the same run (bench/graphile-peer.ts).
import type { PeerDrainResult, PeerOutcome } from './graphile-peer.js';
import type { ScenarioResult, ScenarioSpec } from './scenario.js';
import { fmt, round } from './stats.js';

export const DRAIN_SCENARIOS = ['drain', 'drain-prefetch', 'drain-keys-1000', 'drain-c500'];

/** `drain` and `drain-keys-1000` at 1 worker × 24 (graphile-worker's peer runs 24 jobs at once;
 * --drain-workers / --drain-capacity change that), `drain-c500` at 1 × 500: one session with room
 * for a whole claim batch. With --drain-prefetch=N, `drain-prefetch`: `drain`'s workers holding N
 * attempts more than they run (the SDKs' prefetch, docs/worker-protocol.md). */
export function drainSpecs(count: number, opt: (name: string) => string | undefined): ScenarioSpec[] {
  const workers = Number(opt('drain-workers') ?? 1);
  const capacity = Number(opt('drain-capacity') ?? 24);
  const prefetch = opt('drain-prefetch');
  const base = { count, submit: 'batch' as const, drain: true };
  return [
    { ...base, name: 'drain', keys: null, workers, capacity },
    ...(prefetch === undefined ? [] : [{ ...base, name: 'drain-prefetch', keys: null, workers, capacity, prefetch: Number(prefetch) }]),
    { ...base, name: 'drain-keys-1000', keys: 1000, workers, capacity },
    { ...base, name: 'drain-c500', keys: null, workers: 1, capacity: 500 },
  ];
}

export const DRAIN_HOW =
  'a backlog committed by batch submit with no worker connected, then the workers connect fresh; clock from the first connection (the peer: its runner start) to the last result committed (the peer: its jobs table found empty); CPU of every process tree over that window';

interface Row {
  system: string;
  shape: string;
  tasks: number;
  seconds: number;
  tasksPerSec: number;
  cpuTotal: number;
  cpuSplit: string;
  statements: number | null;
  commits: number;
  rowsWritten: number;
  rowsXIndexes: number | null;
}

function orbitRow(r: ScenarioResult): Row {
  const c = r.cpuMsPerTask;
  const t = Object.values(r.db.tableRows);
  return {
    system: `Orbit ${r.spec.name}`,
    shape: `${r.spec.workers ?? '-'} × ${r.spec.capacity ?? '-'}${r.spec.prefetch ? ` + ${r.spec.prefetch} prefetch` : ''}`,
    tasks: r.tasks,
    seconds: r.seconds,
    tasksPerSec: r.tasksPerSec,
    cpuTotal: c.total,
    cpuSplit: `mariadbd ${fmt(c.mariadbd, 3)} / gateway ${fmt(c.gateway, 3)} / workers ${fmt(c.workers, 3)} / producers (idle) ${fmt(c.producers, 3)}`,
    statements: r.db.statements,
    commits: r.db.commits,
    rowsWritten: t.reduce((s, x) => s + x.rows, 0),
    rowsXIndexes: t.reduce((s, x) => s + x.rowsXIndexes, 0),
  };
}

function peerRow(r: PeerDrainResult): Row {
  const c = r.cpuMsPerTask;
  return {
    system: `${r.name} (peer)`,
    shape: `${r.workers} × ${r.concurrency}`,
    tasks: r.tasks,
    seconds: r.seconds,
    tasksPerSec: r.tasksPerSec,
    cpuTotal: c.total,
    cpuSplit: `postgres ${fmt(c.postgres, 3)} / runner ${fmt(c.runner, 3)}`,
    statements: null,
    commits: r.transactionsPerTask,
    rowsWritten: r.tuplesWrittenPerTask,
    rowsXIndexes: null,
  };
}

const drains = (scenarios: ScenarioResult[]) => scenarios.filter((r) => r.spec.drain);

/** The drain table: Orbit's drain scenarios, then the peer's modes, then the ratios the issue's
 * targets are read from. Empty when no drain ran. */
export function drainText(scenarios: ScenarioResult[], peer: PeerOutcome | null, loadavg?: number[]): string {
  const orbit = drains(scenarios);
  if (!orbit.length && !peer?.results.length) return '';
  const rows = [...orbit.map(orbitRow), ...(peer?.results ?? []).map(peerRow)];
  const lines = [
    `Drain (${DRAIN_HOW}).${loadavg ? ` Load average at the report: ${loadavg.map((x) => fmt(x, 1)).join(' / ')}.` : ''}`,
    '',
    '| system | workers × capacity | tasks | s | tasks/s | CPU ms per task | CPU ms per task by process | statements | commits (peer: transactions) | rows written (peer: tuples) | rows × indexes |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.system} | ${r.shape} | ${fmt(r.tasks)} | ${fmt(r.seconds, 2)} | ${fmt(r.tasksPerSec)} | ${fmt(r.cpuTotal, 3)} | ${r.cpuSplit} | ` +
        `${r.statements === null ? 'n/a' : fmt(r.statements, 2)} | ${fmt(r.commits, 3)} | ${fmt(r.rowsWritten, 2)} | ${r.rowsXIndexes === null ? 'n/a' : fmt(r.rowsXIndexes, 1)} |`,
    ),
  ];
  lines.push(
    '',
    '/proc reads CPU in 10 ms ticks per process: a window under a second (the batched peer at 5 000 tasks) reads CPU per task to about ±0.02 ms; 20 000 tasks read it 4 × finer.',
  );
  if (peer?.skipped) lines.push('', `graphile-worker peer: ${peer.skipped}`);
  else if (peer?.postgresVersion)
    lines.push('', `Peer database: ${peer.postgresVersion} (Debian package), a private cluster as initdb leaves it, on 127.0.0.1.`);
  const batched = peer?.results.find((r) => r.name.endsWith('batched'));
  if (batched) {
    lines.push('');
    for (const r of orbit)
      lines.push(
        `${r.spec.name} ÷ graphile-worker batched: ${fmt(r.tasksPerSec / batched.tasksPerSec, 3)} of its tasks/s, ${fmt(r.cpuMsPerTask.total / batched.cpuMsPerTask.total, 1)} × its CPU per task`,
      );
  }
  const plain = orbit.find((r) => r.spec.name === 'drain');
  const keyed = orbit.find((r) => r.spec.name === 'drain-keys-1000');
  if (plain && keyed) lines.push(`drain-keys-1000 ÷ drain: ${fmt(keyed.tasksPerSec / plain.tasksPerSec, 3)} of its tasks/s`);
  return lines.join('\n');
}

export function drainPeerJson(peer: PeerOutcome | null) {
  if (!peer) return null;
  return {
    skipped: peer.skipped,
    postgres: peer.postgresVersion,
    how: DRAIN_HOW,
    results: peer.results.map((r) => ({
      name: r.name,
      options: r.options,
      workers: r.workers,
      concurrency: r.concurrency,
      warmup_tasks: r.warmupTasks,
      tasks: r.tasks,
      seconds: round(r.seconds),
      tasks_per_s: round(r.tasksPerSec, 1),
      cpu_ms_per_task: { postgres: round(r.cpuMsPerTask.postgres, 4), runner: round(r.cpuMsPerTask.runner, 4), total: round(r.cpuMsPerTask.total, 4) },
      transactions_per_task: round(r.transactionsPerTask),
      tuples_written_per_task: round(r.tuplesWrittenPerTask),
    })),
  };
}
