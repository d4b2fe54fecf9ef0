// `npm run bench -- --processes=1,2 [--pairs=N]`: the gateway as 1 and as 2 processes
// (ORBIT_PROCESSES, server/cli/processes.ts) in one run. Each scenario runs in alternated pairs —
// round 1 in the listed order, round 2 reversed, and so on (ABBA: a machine that slows down or
// speeds up during the run weighs on both counts alike) — on a gateway started afresh with that
// count, because the machine is shared and only runs of one run, side by side, compare.
import { uPerTask } from './cpu.js';
import type { ScenarioResult } from './scenario.js';
import { fmt, median, round } from './stats.js';

export interface ScalingRun {
  scenario: string;
  processes: number;
  round: number;
  result: ScenarioResult;
}

/** `--processes=1,2` → [1, 2]: distinct counts of 1..64, in the given order. */
export function parseProcessCounts(v: string | undefined): number[] {
  if (v === undefined) return [1];
  const counts = v.split(',').map((x) => (/^[0-9]{1,2}$/.test(x) ? Number(x) : NaN));
  if (counts.some((n) => !(n >= 1 && n <= 64)) || new Set(counts).size !== counts.length)
    throw new Error(`--processes must be distinct integers 1..64 separated by commas, got ${JSON.stringify(v)}`);
  return counts;
}

/** The order of the counts in round `r` (0-based): as given, then reversed, alternately. */
export function roundOrder(counts: number[], r: number): number[] {
  return r % 2 === 0 ? counts : [...counts].reverse();
}

interface Cell {
  scenario: string;
  processes: number;
  rounds: number[];
  medianPerSec: number;
  uTotal: number;
  uGateway: number;
  gatewayMsPerTask: number;
  submitToAssignP99: number;
}

function cells(runs: ScalingRun[], unitUs: number): Cell[] {
  const keys = [...new Set(runs.map((r) => `${r.scenario}\u0000${r.processes}`))];
  return keys.map((k) => {
    const [scenario, p] = k.split('\u0000') as [string, string];
    const mine = runs.filter((r) => r.scenario === scenario && r.processes === Number(p)).map((r) => r.result);
    const us = mine.map((r) => uPerTask(r.cpuMsPerTask, unitUs));
    return {
      scenario,
      processes: Number(p),
      rounds: mine.map((r) => r.tasksPerSec),
      medianPerSec: median(mine.map((r) => r.tasksPerSec)),
      uTotal: median(us.map((u) => u.total)),
      uGateway: median(us.map((u) => u.gateway)),
      gatewayMsPerTask: median(mine.map((r) => r.cpuMsPerTask.gateway)),
      submitToAssignP99: median(mine.map((r) => r.submitToAssignMs.p99)),
    };
  });
}

/** The scaling table: per scenario and process count, tasks/s of each round and their median, its
 * ratio to the first count's median, CPU per task (u, and the gateway's share). */
export function scalingText(runs: ScalingRun[], counts: number[], unitUs: number): string {
  const cs = cells(runs, unitUs);
  const first = (s: string) => cs.find((c) => c.scenario === s && c.processes === counts[0]);
  return [
    `gateway processes (ORBIT_PROCESSES ${counts.join(' vs ')}), each scenario in alternated rounds on a freshly started gateway:`,
    '',
    '| scenario | processes | tasks/s per round | median tasks/s | × the first count | CPU u per task | gateway u per task (ms) | submit→assign p99 ms |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...cs.map(
      (c) =>
        `| ${c.scenario} | ${c.processes} | ${c.rounds.map((x) => fmt(x)).join(' / ')} | ${fmt(c.medianPerSec)} | ${fmt(c.medianPerSec / (first(c.scenario)?.medianPerSec ?? NaN), 2)} | ` +
        `${fmt(c.uTotal, 1)} | ${fmt(c.uGateway, 1)} (${fmt(c.gatewayMsPerTask, 2)}) | ${fmt(c.submitToAssignP99, 1)} |`,
    ),
  ].join('\n');
}

export function scalingJson(runs: ScalingRun[], counts: number[], unitUs: number) {
  const cs = cells(runs, unitUs);
  const first = (s: string) => cs.find((c) => c.scenario === s && c.processes === counts[0]);
  return cs.map((c) => ({
    scenario: c.scenario,
    processes: c.processes,
    tasks_per_s_rounds: c.rounds.map((x) => round(x, 1)),
    tasks_per_s_median: round(c.medianPerSec, 1),
    ratio_to_first: round(c.medianPerSec / (first(c.scenario)?.medianPerSec ?? NaN), 3),
    cpu_u_per_task: round(c.uTotal, 2),
    gateway_u_per_task: round(c.uGateway, 2),
    submit_to_assign_p99_ms: round(c.submitToAssignP99, 1),
  }));
}
