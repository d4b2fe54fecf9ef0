#!/usr/bin/env node
// `npm run bench [-- --quick] [-- --json] [-- --json-out=FILE]`: one run on this machine, on its
// own durable MariaDB (innodb_flush_log_at_trx_commit=1) and gateway process:
//   (a) the bare-database baseline, warmed up and repeated: autocommit single-row INSERTs (the
//       headline) and START TRANSACTION; INSERT; COMMIT, over the gateway's connection count,
//       with MariaDB's CPU per autocommit INSERT: the unit u (bench/cpu.ts);
//   (b) end-to-end throughput (producers and workers at the same time) for `unkeyed` (one task
//       per request), `unkeyed-batch` (POST /v1/tasks:batch), `keys-1000`, `hot-keys-10`, each
//       as a ratio to the autocommit baseline;
//   (c) per task: CPU in u (the headline beside tasks/s) and in ms, of mariadbd, the gateway, the
//       workers and the producers (whole process trees); SQL statements, commits, row-lock
//       waits, claim rounds and the empty share;
//   (d) p50/p99 submit→assign and result→result.ok, also paced at half the `unkeyed` peak;
//   (e) gateway memory per 1 000 idle worker sessions (RSS and JS heap after a forced full GC).
// Options: --batch-size=N (items per batch request, default 100), --keyed-submit=single|batch
// (default batch), --unkeyed-only=N (baseline, one unkeyed scenario of N tasks, idle sessions),
// --scenarios=a,b (only these scenarios, e.g. hot-keys-10,hot-keys-10-preloaded; unkeyed-paced
// needs unkeyed or --paced-rate), --paced-rate=N (unkeyed-paced at N tasks/s instead of half the
// unkeyed peak: two builds compared at the same load, whatever their peaks), --hot=N (tasks of each hot-key scenario: 300 quick, 2 000 full);
//   (g) `workflow-chain-3` and `workflow-fanout-100`: runs/s of a 3-step chain and of a 100-element
//       fan-out, statements per run, step and task, CPU per run and task (bench/workflow-load.ts);
//   (f) `renew-flood`: one session's 20 000 renews (--renews=N) next to other tenants' submits and
//       tasks, their p50/p99 beside the same without the flood (bench/renew-flood.ts).
//   (h) `drain`, `drain-keys-1000` (1 worker × 24; --drain-workers=N, --drain-capacity=N) and
//       `drain-c500` (1 × 500), with --drain-prefetch=N also `drain-prefetch` (`drain`'s workers
//       with prefetch N): a backlog of 20 000 tasks (5 000 quick) committed with no worker
//       connected, then drained; next to it graphile-worker's drain of the same backlog on a
//       private PostgreSQL cluster (bench/drain.ts, bench/graphile-peer.ts). --peers installs the
//       peer's packages if missing; --no-peers skips it; without PostgreSQL it is skipped.
// Each scenario of (b)–(d) is measured warm, as the baseline is: the same processes first run a
// third of its task count (--warmup=F: that share; --no-warmup: none, the cold measurement),
// drained before its window opens, and no figure counts those tasks (bench/scenario-warmup.ts).
// --processes=N runs the gateway as N processes (ORBIT_PROCESSES); --processes=1,2 runs each
// throughput scenario in --pairs=N (default 2) alternated rounds per count, each on a freshly
// started gateway, and adds the scaling table (bench/process-scaling.ts); the other parts then run
// on a gateway of the first count.
// --workers=go: the worker processes of every scenario are the Go SDK's
// (worker-sdk-go/internal/cmd/workerproc, built first with `go build`) instead of Node's
// bench/worker-proc.ts: the same environment, lines and capacity, so their CPU per task compares.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { startEmbeddedMariaDb, ensureDatabase } from '../server/mariadb/embedded-mariadb.js';
import { createPool, parseDsn } from '../server/db/pool.js';
import { migrateUp } from '../server/mariadb/migrations.js';
import { bootstrap } from '../server/admin/bootstrap.js';
import { packageRoot } from '../server/paths.js';
import { baselines, type BaselineOptions } from './baseline.js';
import { dbCalibrate, INNODB_MONITOR_ARG, USERSTAT_ARG } from './counters.js';
import { extraServerArgs } from './db-profile.js';
import { uPerTask } from './cpu.js';
import { warmupCount, warmupFraction } from './scenario-warmup.js';
import { DRAIN_SCENARIOS, drainSpecs } from './drain.js';
import { runGraphilePeer, type PeerOutcome } from './graphile-peer.js';
import { batchEndpointAvailable, runScenario, type ScenarioResult, type ScenarioSetup, type ScenarioSpec } from './scenario.js';
import { idleSessions, type GcReading } from './idle-sessions.js';
import { runScheduledLoad, type ScheduledLoadResult } from './scheduled-load.js';
import { runRenewFlood, renewFloodText, type RenewFloodResult } from './renew-flood.js';
import { runWorkflowLoad, workflowLoadText, type WorkflowLoadResult, type WorkflowLoadSpec } from './workflow-load.js';
import { reportJson, reportText, type Skipped } from './report.js';
import { fmt } from './stats.js';
import { useGoWorkers } from './procs.js';
import { parseProcessCounts, roundOrder, scalingJson, scalingText, type ScalingRun } from './process-scaling.js';

const argv = process.argv.slice(2);
const args = new Set(argv);
const opt = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
/** A count option: a positive integer, so a typo stops the run instead of skipping a scenario. */
function count(name: string): number | undefined;
function count(name: string, fallback: number): number;
function count(name: string, fallback?: number): number | undefined {
  const v = opt(name);
  if (v === undefined) return fallback;
  if (!/^[1-9][0-9]*$/.test(v)) throw new Error(`--${name} must be a positive integer, not ${JSON.stringify(v)}`);
  return Number(v);
}
// `npm run bench --quick` (without `--`) reaches the script as npm_config_quick=true, not argv.
const quick = args.has('--quick') || process.env.npm_config_quick === 'true';
const asJson = args.has('--json') || process.env.npm_config_json === 'true';
const batchSize = count('batch-size', 100);
const keyedSubmit = opt('keyed-submit') === 'single' ? 'single' : 'batch';
const processCounts = parseProcessCounts(opt('processes'));
const pairs = count('pairs', 2);
const pacedRate = count('paced-rate');
const hot = count('hot');
const renews = count('renews', 20_000);
const warmup = warmupFraction(argv);
const workerKind = opt('workers') ?? 'node';
if (workerKind !== 'node' && workerKind !== 'go') throw new Error(`--workers must be node or go, not ${workerKind}`);
const progress = (l: string) => {
  if (!asJson || process.stderr.isTTY) process.stderr.write(`\r\x1b[K${l}`);
};
const t0 = performance.now();
const say = (l: string) => process.stderr.write(`\r\x1b[K${l ? `[${((performance.now() - t0) / 1000).toFixed(0).padStart(3)} s] ${l}` : ''}\n`);

/** Builds the Go SDK's bench worker (`--workers=go`) into `dir`; its path. */
async function buildGoWorker(dir: string): Promise<string> {
  const bin = path.join(dir, 'go-workerproc');
  say('workers: building the Go worker (worker-sdk-go/internal/cmd/workerproc)');
  const child = spawn('go', ['build', '-o', bin, './internal/cmd/workerproc'], {
    cwd: path.join(packageRoot(), 'worker-sdk-go'),
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', (err) => reject(new Error(`--workers=go needs Go 1.26 on PATH: ${err.message}`)));
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`go build of the Go worker failed (${code})`);
  return bin;
}

const POOL_CONNECTIONS = 16; // the gateway's pool size (server/db/pool.ts)

interface Gateway {
  child: ChildProcess;
  url: string;
  processes: number;
  /** Full GC in the gateway, then its heap in use and RSS (bench/gateway-gc-hook). */
  gc(): Promise<GcReading>;
}

async function startGateway(dsn: string, processes: number): Promise<Gateway> {
  // ORBIT_BENCH_CPU_PROF=dir: the gateway writes a V8 CPU profile there at exit (node --cpu-prof).
  // With several processes each one does (node:cluster forks with the primary's exec arguments).
  const prof = process.env.ORBIT_BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.ORBIT_BENCH_CPU_PROF}`] : [];
  // ORBIT_BENCH_GATEWAY_NODE_ARGS='--perf-basic-prof --log-deopt …': more node/V8 options for the
  // gateway only (profiling: `perf record -p` on its pid, V8's logs), split on spaces.
  prof.push(...(process.env.ORBIT_BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean));
  const hook = ['--expose-gc', '--import', pathToFileURL(path.join(packageRoot(), 'dist/bench/gateway-gc-hook.js')).href];
  const child = spawn(process.execPath, [...prof, ...hook, path.join(packageRoot(), 'dist/server/cli/orbit.js')], {
    env: { ...process.env, ORBIT_MYSQL_DSN: dsn, ORBIT_HTTP_ADDR: '127.0.0.1:0', ORBIT_LOG_LEVEL: 'warn', ORBIT_PROCESSES: String(processes) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // The gateway's processes (the primary's children when there are several): where GC runs.
  let pids: number[] = [];
  let gcWaiter: ((r: GcReading) => void) | null = null;
  let readings: GcReading[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (c) => reject(new Error(`gateway exited ${c}`)));
    readline.createInterface({ input: child.stdout! }).on('line', (l) => {
      if (l.startsWith('{"bench_gc"')) {
        const g = JSON.parse(l).bench_gc;
        readings.push({ heapUsed: g.heap_used, external: g.external, rss: g.rss });
        if (readings.length < pids.length) return;
        const sum = (f: (r: GcReading) => number) => readings.reduce((a, r) => a + f(r), 0);
        gcWaiter?.({ heapUsed: sum((r) => r.heapUsed), external: sum((r) => r.external), rss: sum((r) => r.rss) });
        gcWaiter = null;
      } else if (l.includes('orbit gateway ready')) {
        const ready = JSON.parse(l);
        pids = processes === 1 ? [child.pid!] : (ready.processes as { pid: number }[]).map((p) => p.pid);
        resolve(ready.url);
      } else if (/"level":(50|60)/.test(l)) say(`gateway: ${l.slice(0, 2000)}`);
    });
  });
  const gc = () =>
    new Promise<GcReading>((resolve) => {
      gcWaiter = resolve;
      readings = [];
      for (const pid of pids) process.kill(pid, 'SIGUSR2');
    });
  return { child, url, processes, gc };
}

async function stopGateway(gw: Gateway): Promise<void> {
  if (gw.child.exitCode !== null || gw.child.signalCode !== null) return;
  const exited = new Promise((r) => gw.child.once('exit', r));
  gw.child.kill('SIGTERM');
  await exited;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-bench-'));
  const db = await startEmbeddedMariaDb({
    dataDir: dir,
    serverArgs: ['--innodb-flush-log-at-trx-commit=1', '--sync-binlog=0', INNODB_MONITOR_ARG, USERSTAT_ARG, ...extraServerArgs()],
    log: say,
  });
  let gw: Gateway | null = null;
  if (workerKind === 'go') useGoWorkers(await buildGoWorker(dir));
  const pool = createPool(db.dsn('orbit'), { connectionLimit: 4 });
  try {
    await ensureDatabase(db, 'orbit');
    const dsn = db.dsn('orbit');
    await migrateUp(pool);
    const creds = await bootstrap(pool, { application: 'bench', namespace: 'bench', environment: 'bench', queues: ['warmup'], workerAccess: true, url: '' });
    const n = quick
      ? { unkeyed: 2000, batch: 3000, keyed: 2000, hot: 300, pacedSecs: 8, idle: 1000, drain: 5000 }
      : { unkeyed: 20000, batch: 20000, keyed: 20000, hot: 2000, pacedSecs: 40, idle: 1000, drain: 20000 };
    n.hot = hot ?? n.hot;
    const picked = opt('scenarios')?.split(',');
    const wanted = (name: string) => !picked || picked.includes(name);
    const bo: BaselineOptions = quick
      ? { connections: POOL_CONNECTIONS, warmupMs: 1000, roundMs: 1500, rounds: 3 }
      : { connections: POOL_CONNECTIONS, warmupMs: 3000, roundMs: 5000, rounds: 3 };
    const baselineHow = `median of ${bo.rounds} rounds of ${bo.roundMs / 1000} s after a ${bo.warmupMs / 1000} s warm-up`;

    const overhead = await dbCalibrate(pool);
    say(`baseline: single-row INSERTs over ${POOL_CONNECTIONS} connections, autocommit and in transactions (${baselineHow}, rounds alternated)`);
    const { autocommit, transaction } = await baselines(parseDsn(dsn), bo, overhead, db.child.pid);
    say(`baseline: autocommit ${fmt(autocommit.medianPerSec)} commits/s (rounds ${autocommit.roundsPerSec.map((x) => fmt(x)).join(' / ')})`);
    say(
      `baseline: MariaDB CPU ${fmt(autocommit.cpuUsPerRow, 1)} µs per autocommit INSERT = 1 u (rounds ${autocommit.roundsCpuUsPerRow.map((x) => fmt(x, 1)).join(' / ')})`,
    );
    say(
      `baseline: START TRANSACTION; INSERT; COMMIT ${fmt(transaction.medianPerSec)} commits/s (rounds ${transaction.roundsPerSec.map((x) => fmt(x)).join(' / ')})`,
    );

    gw = await startGateway(dsn, processCounts[0]!);
    say(`gateway ready at ${gw.url}${gw.processes > 1 ? ` (${gw.processes} processes)` : ''}`);
    const setup: ScenarioSetup = {
      url: gw.url,
      token: creds.token,
      pool,
      workers: 2,
      capacity: 32,
      producers: 2,
      singleConcurrency: 16,
      batchConcurrency: 4,
      batchSize,
      mariadbPid: db.child.pid,
      gatewayPid: gw.child.pid,
      overhead,
      stallMs: 60_000,
      warmupFraction: warmup,
    };
    const hasBatch = await batchEndpointAvailable(gw.url, creds.token);
    if (!hasBatch) say('POST /v1/tasks:batch is not available on this gateway: unkeyed-batch skipped, keyed scenarios submit one task per request');
    const results: (ScenarioResult | Skipped)[] = [];
    const scaling: ScalingRun[] = [];
    /** The gateway with `processes` processes (a fresh one when the count changes). */
    const useGateway = async (processes: number) => {
      if (gw!.processes === processes) return;
      await stopGateway(gw!);
      gw = await startGateway(dsn, processes);
      setup.url = gw.url;
      setup.gatewayPid = gw.child.pid;
    };
    const run = async (spec: ScenarioSpec): Promise<ScenarioResult | null> => {
      if (processCounts.length > 1 && !spec.rate) {
        let last: ScenarioResult | null = null;
        for (let round = 0; round < pairs; round++) {
          for (const p of roundOrder(processCounts, round)) {
            await useGateway(p);
            last = await runOne({ ...spec, name: `${spec.name}.p${p}.r${round + 1}` });
            if (last) scaling.push({ scenario: spec.name, processes: p, round, result: last });
          }
        }
        await useGateway(processCounts[0]!);
        return last;
      }
      return runOne(spec);
    };
    const runOne = async (spec: ScenarioSpec): Promise<ScenarioResult | null> => {
      if (spec.submit === 'batch' && !hasBatch) {
        if (spec.name === 'unkeyed-batch') {
          results.push({ spec, reason: 'POST /v1/tasks:batch not available (404)' });
          return null;
        }
        spec = { ...spec, submit: 'single' };
      }
      const r = await runScenario(setup, spec, progress);
      if (r.warmupTasks > 0) say(`${spec.name}: warm-up of ${fmt(r.warmupTasks)} tasks in ${fmt(r.warmupSeconds, 1)} s, drained`);
      say(
        `${spec.name}: ${fmt(r.tasks)} tasks in ${fmt(r.seconds, 1)} s = ${fmt(r.tasksPerSec)} tasks/s (${fmt(r.tasksPerSec / autocommit.medianPerSec, 3)} × autocommit baseline), ` +
          `${fmt(uPerTask(r.cpuMsPerTask, autocommit.cpuUsPerRow).total, 1)} u per task`,
      );
      results.push(r);
      return r;
    };
    const only = opt('unkeyed-only');
    if (only) {
      await run({ name: 'unkeyed', count: Number(only), keys: null, submit: 'single' });
    } else {
      const unkeyed = wanted('unkeyed') ? await run({ name: 'unkeyed', count: n.unkeyed, keys: null, submit: 'single' }) : null;
      if (wanted('unkeyed-batch')) await run({ name: 'unkeyed-batch', count: n.batch, keys: null, submit: 'batch' });
      if (wanted('keys-1000')) await run({ name: 'keys-1000', count: n.keyed, keys: 1000, submit: keyedSubmit });
      if (wanted('hot-keys-10')) await run({ name: 'hot-keys-10', count: n.hot, keys: 10, submit: keyedSubmit });
      if (wanted('hot-keys-10-preloaded')) await run({ name: 'hot-keys-10-preloaded', count: n.hot, keys: 10, submit: keyedSubmit, preload: true });
      const rate = pacedRate ?? (unkeyed ? Math.max(10, Math.round(unkeyed.tasksPerSec / 2)) : null);
      if (rate && wanted('unkeyed-paced')) {
        await run({ name: 'unkeyed-paced', count: Math.max(200, Math.round(rate * n.pacedSecs)), keys: null, submit: 'single', rate });
      }
      for (const spec of drainSpecs(n.drain, opt)) if (wanted(spec.name)) await run(spec);
    }

    // graphile-worker's drain of the same backlog, next to Orbit's (bench/graphile-peer.ts).
    let drainPeer: PeerOutcome | null = null;
    if (!only && !args.has('--no-peers') && DRAIN_SCENARIOS.some(wanted)) {
      drainPeer = await runGraphilePeer({ tasks: n.drain, warmupTasks: warmupCount(n.drain, warmup), install: args.has('--peers'), say });
    }

    let scheduled: ScheduledLoadResult | null = null;
    if (!only && wanted('scheduled-load')) {
      // Schedules firing every second next to ordinary producers (bench/scheduled-load.ts).
      scheduled = await runScheduledLoad({ url: gw.url, token: creds.token, pool }, quick ? { schedules: 50, seconds: 15 } : {}, progress);
      say(
        `scheduled-load: ${fmt(scheduled.schedules)} schedules every second for ${fmt(scheduled.seconds)} s: ${fmt(scheduled.firesPerSec)} fires/s, ` +
          `fire lag p50 ${fmt(scheduled.lagP50Ms)} ms / p99 ${fmt(scheduled.lagP99Ms)} ms (max ${fmt(scheduled.lagMaxMs)}), ordinary tasks ${fmt(scheduled.ordinaryTasksPerSec)}/s`,
      );
    }

    const workflows: WorkflowLoadResult[] = [];
    const wfSpecs: WorkflowLoadSpec[] = [
      { name: 'workflow-chain-3', runs: quick ? 300 : 2000, concurrency: 16 },
      { name: 'workflow-fanout-100', runs: quick ? 20 : 100, concurrency: 4 },
    ];
    for (const spec of only ? [] : wfSpecs.filter((w) => wanted(w.name))) {
      if ((await fetch(`${gw.url}/v1/workflows`, { headers: { authorization: `Bearer ${creds.token}` } })).status === 404) {
        say(`${spec.name}: skipped (this gateway has no /v1/workflows)`);
        continue;
      }
      const r = await runWorkflowLoad({ ...setup, stallMs: 60_000 }, spec, progress);
      say(`${spec.name}: ${fmt(r.spec.runs)} runs in ${fmt(r.seconds, 1)} s = ${fmt(r.runsPerSec, 1)} runs/s (${fmt(r.tasksPerSec)} tasks/s)`);
      say(workflowLoadText([r], autocommit.cpuUsPerRow).trimEnd());
      workflows.push(r);
    }

    let renewFlood: RenewFloodResult | null = null;
    if (!only && wanted('renew-flood')) {
      // One session's renew flood next to other tenants' producers and worker (bench/renew-flood.ts).
      renewFlood = await runRenewFlood({ url: gw.url, pool, gatewayPid: gw.child.pid }, { renews }, progress);
      say(renewFloodText(renewFlood));
    }

    progress(`idle sessions: opening ${n.idle}`);
    const idle = await idleSessions(gw.url, creds.token, creds.queue_id, n.idle, gw.gc);
    say(
      `idle sessions: ${fmt(idle.sessions)} → ${fmt(idle.mbPer1000, 1)} MB of gateway RSS (${fmt(idle.heapMbPer1000, 1)} MB of JS heap + external) per 1 000`,
    );

    const input = {
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, memory_gib: Math.round(os.totalmem() / 2 ** 30), node: process.version },
      mode: quick ? ('quick' as const) : ('full' as const),
      command: ['npm run bench', ...(argv.length ? ['--', ...argv] : [])].join(' '),
      baselineHow,
      warmupFraction: warmup,
      autocommit,
      transaction,
      scenarios: results,
      idle,
      batchSize,
      scheduled,
      renewFlood,
      workflows,
      drainPeer,
      loadavg: os.loadavg(),
    };
    say('');
    const scalingReport = scaling.length ? `\n${scalingText(scaling, processCounts, autocommit.cpuUsPerRow)}\n` : '';
    const json = {
      ...reportJson(input),
      processes: processCounts,
      process_scaling: scaling.length ? scalingJson(scaling, processCounts, autocommit.cpuUsPerRow) : null,
    };
    const jsonOut = opt('json-out');
    if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(json, null, 2) + '\n');
    process.stdout.write(asJson ? JSON.stringify(json, null, 2) + '\n' : reportText(input) + scalingReport);
  } finally {
    await pool.end().catch(() => {});
    if (gw) await stopGateway(gw);
    await db.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`\nbench failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
