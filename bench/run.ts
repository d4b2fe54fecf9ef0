#!/usr/bin/env node
// `npm run bench [-- --quick] [-- --json] [-- --json-out=FILE]`: one run on this machine, on its own durable MariaDB
// (innodb_flush_log_at_trx_commit=1) and gateway process:
//   (a) the bare-database baseline (single-row commit transactions at the gateway's connection count),
//   (b) end-to-end throughput for unkeyed tasks, tasks over 1 000 keys, tasks over 10 hot keys,
//   (c) p50/p99 submit→assign (database clock) and result→result.ok (worker clock) at half peak,
//   (d) commits and redo-log fsyncs per task, (e) gateway RSS per 1 000 idle sessions,
//   (f) each throughput as a ratio to the baseline.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { startEmbeddedMariaDb, ensureDatabase } from '../server/db/embedded-mariadb.js';
import { createPool, parseDsn } from '../server/db/pool.js';
import { migrateUp } from '../server/db/migrations.js';
import { bootstrap } from '../server/admin/bootstrap.js';
import { packageRoot } from '../server/paths.js';
import { baseline } from './baseline.js';
import { runScenario, type ScenarioResult } from './scenario.js';
import { idleSessionsRss } from './idle-sessions.js';
import { fmt } from './stats.js';

const args = new Set(process.argv.slice(2));
// `npm run bench --quick` (without `--`) reaches the script as npm_config_quick=true, not argv.
const quick = args.has('--quick') || process.env.npm_config_quick === 'true';
const asJson = args.has('--json') || process.env.npm_config_json === 'true';
const progress = (l: string) => {
  if (!asJson || process.stderr.isTTY) process.stderr.write(`\r\x1b[K${l}`);
};
const say = (l: string) => process.stderr.write(`\r\x1b[K${l}\n`);

const POOL_CONNECTIONS = 16; // the gateway's pool size (server/db/pool.ts)

async function startGateway(dsn: string): Promise<{ child: ChildProcess; url: string }> {
  // ORBIT_BENCH_CPU_PROF=dir: the gateway writes a V8 CPU profile there at exit (node --cpu-prof).
  const prof = process.env.ORBIT_BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.ORBIT_BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...prof, path.join(packageRoot(), 'dist/server/cli/orbit.js')], {
    env: { ...process.env, ORBIT_MYSQL_DSN: dsn, ORBIT_HTTP_ADDR: '127.0.0.1:0', ORBIT_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (c) => reject(new Error(`gateway exited ${c}`)));
    readline.createInterface({ input: child.stdout! }).on('line', (l) => {
      if (l.includes('orbit gateway ready')) resolve(JSON.parse(l).url);
      else if (/"level":(50|60)/.test(l)) say(`gateway: ${l.slice(0, 2000)}`);
    });
  });
  return { child, url };
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-bench-'));
  const db = await startEmbeddedMariaDb({ dataDir: dir, serverArgs: ['--innodb-flush-log-at-trx-commit=1', '--sync-binlog=0'], log: say });
  let gw: { child: ChildProcess; url: string } | null = null;
  try {
    await ensureDatabase(db, 'orbit');
    const dsn = db.dsn('orbit');
    const pool = createPool(dsn, { connectionLimit: 4 });
    await migrateUp(pool);
    const creds = await bootstrap(pool, { application: 'bench', namespace: 'bench', environment: 'bench', queues: ['warmup'], workerAccess: true, url: '' });
    const n = quick ? { base: 2000, unkeyed: 2000, keyed: 2000, hot: 300, paced: 600 } : { base: 20000, unkeyed: 20000, keyed: 20000, hot: 2000, paced: 4000 };

    say(`baseline: ${n.base} single-row commits over ${POOL_CONNECTIONS} connections`);
    const base = await baseline(parseDsn(dsn), POOL_CONNECTIONS, n.base);
    gw = await startGateway(dsn);
    const setup = { url: gw.url, token: creds.token, pool, workers: 2, capacity: 32, producers: 32 };
    const results: ScenarioResult[] = [];
    const run = async (spec: Parameters<typeof runScenario>[1]) => {
      const r = await runScenario(setup, spec, progress);
      say(`${r.name}: ${r.tasks} tasks in ${fmt(r.seconds, 1)} s = ${fmt(r.tasksPerSec)} tasks/s`);
      results.push(r);
    };
    // --unkeyed-only=N: just the baseline and one unkeyed scenario of N tasks (e.g. the 5 000-task
    // figure asked for in the gateway issue), then the idle-session measurement.
    const only = process.argv.find((a) => a.startsWith('--unkeyed-only='));
    if (only) {
      await run({ name: 'unkeyed', count: Number(only.split('=')[1]), keys: null });
    } else {
      await run({ name: 'unkeyed', count: n.unkeyed, keys: null });
      await run({ name: 'keys-1000', count: n.keyed, keys: 1000 });
      await run({ name: 'hot-keys-10', count: n.hot, keys: 10 });
      await run({ name: 'hot-keys-10-preloaded', count: n.hot, keys: 10, preload: true });
      const half = Math.max(10, Math.round(results[0]!.tasksPerSec / 2));
      await run({ name: `unkeyed-paced-${half}-per-sec`, count: n.paced, keys: null, rate: half });
    }
    progress('idle sessions');
    const idle = await idleSessionsRss(gw.url, creds.token, creds.queue_id, gw.child.pid!, quick ? 300 : 1000);
    await pool.end();

    const report = {
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, memory_gib: Math.round(os.totalmem() / 2 ** 30), node: process.version },
      mode: quick ? 'quick' : 'full',
      baseline_commits_per_sec: base.commitsPerSec,
      scenarios: results.map((r) => ({ ...r, ratio_to_baseline: r.tasksPerSec / base.commitsPerSec })),
      idle_sessions: idle,
    };
    say('');
    const jsonOut = process.argv.find((a) => a.startsWith('--json-out='));
    if (jsonOut) fs.writeFileSync(jsonOut.slice('--json-out='.length), JSON.stringify(report, null, 2) + '\n');
    if (asJson) {
      process.stdout.write(JSON.stringify(report, null, 2) + '\n');
    } else {
      const lines = [
        `baseline: ${fmt(base.commitsPerSec)} commits/s (${base.total} single-row commit transactions, ${POOL_CONNECTIONS} connections)`,
        '',
        '| scenario | tasks | tasks/s | × baseline | submit→assign p50/p99 ms | result→ok p50/p99 ms | commits/task | fsyncs/task | key release→next grant ms |',
        '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
        ...report.scenarios.map(
          (r) =>
            `| ${r.name} | ${r.tasks} | ${fmt(r.tasksPerSec)} | ${fmt(r.ratio_to_baseline, 2)} | ${fmt(r.submitToAssignP50, 1)} / ${fmt(r.submitToAssignP99, 1)} | ${fmt(r.resultToOkP50, 1)} / ${fmt(r.resultToOkP99, 1)} | ${fmt(r.commitsPerTask, 2)} | ${fmt(r.fsyncsPerTask, 2)} | ${fmt(r.keyHandoffMs, 1)} |`,
        ),
        '',
        `gateway RSS: ${fmt(idle.rssBeforeMb, 1)} MB before, ${fmt(idle.rssAfterMb, 1)} MB with ${idle.sessions} idle sessions → ${fmt(idle.mbPer1000, 1)} MB per 1 000 sessions`,
      ];
      process.stdout.write(lines.join('\n') + '\n');
    }
  } finally {
    if (gw) {
      gw.child.kill('SIGTERM');
      await new Promise((r) => gw!.child.once('exit', r));
    }
    await db.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`\nbench failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
