// The benchmark's CPU accounting and its unit u (bench/cpu.ts), without a database: /proc stat
// parsing, process-tree sums on a synthetic table and on real processes (a grandchild's CPU is
// counted while it runs and after its parent reaped it), the u arithmetic, and the report's u
// fields and headline columns (bench/report.ts), the warm-up's options and how the report says
// whether a run was measured warm (bench/scenario-warmup.ts).
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { describe, expect, it } from 'vitest';
import type { BaselineResult } from '../bench/baseline.js';
import { dbPerUnit } from '../bench/counters.js';
import { cpuPerTask, cpuSnapshot, parseStat, treeCpuMs, uPerTask, type ProcStat } from '../bench/cpu.js';
import { reportJson, reportText, type ReportInput } from '../bench/report.js';
import type { ScenarioResult } from '../bench/scenario.js';
import { DEFAULT_WARMUP_FRACTION, warmupCount, warmupFraction } from '../bench/scenario-warmup.js';

/** A /proc/<pid>/stat line: fields 14–17 (utime, stime, cutime, cstime) in ticks. */
const statLine = (pid: number, comm: string, ppid: number, t: [number, number, number, number]) =>
  `${pid} (${comm}) S ${ppid} ${pid} ${pid} 0 -1 4194560 100 0 0 0 ${t.join(' ')} 20 0 1 0 5 1000 10`;

describe('bench CPU accounting', () => {
  it('parses /proc/<pid>/stat with spaces and parentheses in the command name', () => {
    const s = parseStat(statLine(42, 'node (gw) x', 7, [150, 50, 30, 20]), 100);
    expect(s).toEqual({ pid: 42, ppid: 7, selfMs: 2000, reapedMs: 500 });
  });

  it('sums a process tree: its own, its reaped children and every live descendant, nothing else', () => {
    const rows: [number, number, [number, number, number, number]][] = [
      [10, 1, [100, 0, 5, 0]], // root: 1 000 ms own + 50 ms reaped
      [11, 10, [20, 10, 0, 0]], // child
      [12, 11, [0, 0, 0, 7]], // grandchild (its own reaped child)
      [13, 1, [999, 999, 999, 999]], // unrelated
      [14, 13, [999, 0, 0, 0]], // unrelated's child
    ];
    const table = new Map<number, ProcStat>(rows.map(([pid, ppid, t]) => [pid, parseStat(statLine(pid, 'p', ppid, t), 100)]));
    expect(treeCpuMs(table, 10)).toBe(1000 + 50 + 300 + 70);
    expect(treeCpuMs(table, 11)).toBe(370);
    expect(treeCpuMs(table, 99)).toBeNaN();
    expect(treeCpuMs(table, undefined)).toBeNaN();
  });

  it("counts a real grandchild's CPU while it runs and after its parent reaped it", async () => {
    // The grandchild burns 300 ms of CPU by its own count (process.cpuUsage), says so, and exits
    // when its stdin closes; the child relays that and says when it has reaped it.
    const burn = `const t=()=>{const u=process.cpuUsage();return (u.user+u.system)/1000};while(t()<300);console.log('burned');process.stdin.resume();process.stdin.on('end',()=>process.exit(0))`;
    const parent = `const c=require('node:child_process').spawn(process.execPath,['-e',${JSON.stringify(burn)}],{stdio:['pipe','inherit','inherit']});c.on('exit',()=>console.log('reaped'));process.stdin.once('data',()=>c.stdin.end());process.stdin.resume()`;
    const child = spawn(process.execPath, ['-e', parent], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = readline.createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    try {
      expect((await lines.next()).value).toBe('burned');
      const running = cpuSnapshot({ tree: [child.pid] }).tree;
      child.stdin!.write('x');
      expect((await lines.next()).value).toBe('reaped');
      const reaped = cpuSnapshot({ tree: [child.pid] }).tree;
      // /proc counts whole clock ticks (10 ms): 300 ms of the grandchild read as at least 290.
      expect(running).toBeGreaterThanOrEqual(290);
      expect(reaped).toBeGreaterThanOrEqual(running);
    } finally {
      child.kill();
    }
  });

  it('expresses CPU per task in u of the baseline INSERT, split by process group', () => {
    const cpu = cpuPerTask({ mariadbd: 2000, gateway: 1000, workers: 500, producers: 100 }, 1000);
    expect(cpu).toEqual({ mariadbd: 2, gateway: 1, workers: 0.5, producers: 0.1, total: 3.6 });
    expect(uPerTask(cpu, 100)).toEqual({ total: 36, db: 20, gateway: 10, workers: 5, producers: 1 });
    expect(uPerTask(cpu, 0).total).toBeNaN();
    expect(uPerTask(cpu, NaN).db).toBeNaN();
  });
});

describe('bench report in u', () => {
  const baseline = (mode: 'autocommit' | 'transaction', perSec: number, cpuUs: number[]): BaselineResult => ({
    mode,
    connections: 16,
    roundsPerSec: [perSec, perSec, perSec],
    medianPerSec: perSec,
    bestPerSec: perSec,
    rows: perSec * 4,
    statementsPerRow: 1,
    commitsPerRow: 1,
    roundsCpuUsPerRow: cpuUs,
    cpuUsPerRow: [...cpuUs].sort((a, b) => a - b)[1]!,
  });
  const scenario: ScenarioResult = {
    spec: { name: 'unkeyed-batch', count: 3000, keys: null, submit: 'batch' },
    queueId: 'q',
    warmupTasks: 1000,
    warmupSeconds: 3,
    tasks: 3000,
    seconds: 6,
    tasksPerSec: 500,
    db: dbPerUnit(new Map(), 3000),
    claimRoundsPerTask: null,
    claimRoundsSource: 'none',
    emptyClaimShare: null,
    gatewayTransactionsPerTask: null,
    roundTripsPerTask: null,
    frameBatchMean: null,
    gatewayFinished: null,
    workerFramesPerTask: null,
    workerWritesPerTask: null,
    cpuMsPerTask: cpuPerTask({ mariadbd: 3000 * 1.1, gateway: 3000 * 0.88, workers: 3000 * 0.44, producers: 3000 * 0.022 }, 3000),
    submitToAssignMs: { p50: 1, p99: 2 },
    resultToOkMs: { p50: 1, p99: 2 },
    latencySamples: { submitToAssign: 3000, resultToOk: 3000 },
    httpResponseMs: { p50: 3, p99: 9 },
    submitTransactionsPerTask: 0.01,
    keyHandoffMs: NaN,
  };
  // Only what this report reads; reports other branches add (e.g. a flood's) may stay absent.
  const input = {
    machine: {},
    mode: 'quick',
    command: 'npm run bench -- --quick',
    baselineHow: 'median of 3 rounds',
    warmupFraction: 1 / 3,
    autocommit: baseline('autocommit', 9000, [120, 110, 100]),
    transaction: baseline('transaction', 4000, [200, 210, 190]),
    scenarios: [scenario, { spec: { name: 'skipped-one', count: 1, keys: null, submit: 'batch' }, reason: 'not here' }],
    idle: { sessions: 1000, rssBeforeMb: 100, rssAfterMb: 105, mbPer1000: 5, heapBeforeMb: 28, heapAfterMb: 34, heapMbPer1000: 6 },
    batchSize: 100,
    scheduled: null,
  } as ReportInput;

  it('puts baseline_insert_cpu_us and each scenario’s cpu_u_per_task with its split in the JSON', () => {
    const j = reportJson(input);
    expect(j.baseline_insert_cpu_us).toBe(110);
    expect(j.baseline.autocommit).toMatchObject({ cpu_us_per_row: 110, rounds_cpu_us_per_row: [120, 110, 100] });
    expect(j.scenarios[0]).toMatchObject({ cpu_u_per_task: 22.2, db_u: 10, gateway_u: 8, workers_u: 4, producers_u: 0.2, tasks_per_s: 500 });
    expect(j.scenarios[1]).toMatchObject({ skipped: 'not here', cpu_u_per_task: null });
  });

  it('says whether the scenarios were measured warm, and how many warm-up tasks each ran', () => {
    const j = reportJson(input);
    expect(j.warmup).toMatchObject({ measured: 'warm', fraction: 0.3333 });
    expect(j.scenarios[0]).toMatchObject({
      warmup_tasks: 1000,
      warmup_seconds: 3,
      tasks: 3000,
      latency_samples: { submit_to_assign: 3000, result_to_ok: 3000 },
    });
    const text = reportText(input);
    expect(text).toContain('Scenarios measured warm: each after a drained warm-up of 33 % of its task count');
    expect(text).toContain('| unkeyed-batch | batch of 100 | 3 000 + 1 000 |');
    const cold = { ...input, warmupFraction: 0, scenarios: [{ ...scenario, warmupTasks: 0 }] };
    expect(reportJson(cold).warmup.measured).toBe('cold');
    expect(reportText(cold)).toContain('| unkeyed-batch | batch of 100 | 3 000 |');
  });

  it('reads --warmup=F and --no-warmup, and sizes a warm-up from the task count', () => {
    expect(warmupFraction([])).toBe(DEFAULT_WARMUP_FRACTION);
    expect(warmupFraction(['--quick', '--warmup=0.5'])).toBe(0.5);
    expect(warmupFraction(['--warmup=0.5', '--no-warmup'])).toBe(0);
    expect(() => warmupFraction(['--warmup=2'])).toThrow(/between 0 and 1/);
    expect(() => warmupFraction(['--warmup=x'])).toThrow(/between 0 and 1/);
    expect(warmupCount(2000, 1 / 3)).toBe(667);
    expect(warmupCount(2, 0.1)).toBe(1);
    expect(warmupCount(2000, 0)).toBe(0);
  });

  it('shows u beside tasks/s in the headline table', () => {
    const lines = reportText(input).split('\n');
    expect(lines).toContain('  u = MariaDB CPU per autocommit INSERT:  110.0 µs  (rounds 120.0 / 110.0 / 100.0; the transaction form: 200.0 µs per row)');
    const header = lines.find((l) => l.startsWith('| scenario | submit | tasks |'))!;
    const row = lines.find((l) => l.startsWith('| unkeyed-batch |'))!;
    const cells = (l: string) => l.split('|').map((c) => c.trim());
    const at = (name: string) => cells(row)[cells(header).indexOf(name)];
    expect(at('tasks/s')).toBe('500');
    expect(at('CPU u per task')).toBe('22.2');
    expect(at('u: db / gateway / workers / producers')).toBe('10.0 / 8.0 / 4.0 / 0.2');
    expect(cells(header).length).toBe(cells(lines.find((l) => l.startsWith('| skipped-one |'))!).length);
  });
});
