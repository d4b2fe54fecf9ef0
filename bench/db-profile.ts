// Profiling mariadbd (and the gateway) inside one scenario's measurement window (where the database's
// CPU per task goes). Off unless asked for; nothing here runs in a plain `npm run bench`.
//
// ORBIT_BENCH_SERVER_ARGS='--performance-schema=ON …': more options for the bench's own server,
// after its fixed ones (so `--userstat=0` overrides). Only for a profiling run: the bench's figures
// are taken with the server as `startEmbeddedMariaDb` starts it.
// ORBIT_BENCH_DB_PROFILE=dir: for each scenario, `perf record` attached to mariadbd for exactly the
// window the CPU per task is read over (dir/<scenario>.perf.data; ORBIT_BENCH_PERF_ARGS replaces
// the default sampling options), and — when performance_schema is on — the statement digests of
// that window (events_statements_summary_by_digest, emptied at the window's start) per task, in
// dir/<scenario>.digests.json, with the handler counters (Handler_read_*: rows examined) beside.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type mysql from 'mysql2/promise';
import type { RowDataPacket } from 'mysql2/promise';

export const extraServerArgs = (): string[] => (process.env.ORBIT_BENCH_SERVER_ARGS ?? '').split(/\s+/).filter(Boolean);

const DEFAULT_PERF_ARGS = '-e cpu-clock -F 999 --call-graph dwarf,16384';

export interface DbProfile {
  /** Ends the window: stops perf and writes the digests, per task. */
  stop(tasks: number): Promise<void>;
}

async function handlerCounters(q: mysql.Pool): Promise<Map<string, number>> {
  const [rows] = await q.query<RowDataPacket[]>("SHOW GLOBAL STATUS LIKE 'Handler\\_%'");
  return new Map(rows.map((r) => [r.Variable_name as string, Number(r.Value)]));
}

async function digestsOn(q: mysql.Pool): Promise<boolean> {
  const [rows] = await q.query<RowDataPacket[]>("SHOW GLOBAL VARIABLES LIKE 'performance_schema'");
  return rows[0]?.Value === 'ON';
}

function stopPerf(perf: ChildProcess | null): Promise<void> {
  if (!perf || perf.exitCode !== null) return Promise.resolve();
  const exited = new Promise<void>((r) => perf.once('exit', () => r()));
  perf.kill('SIGINT');
  return exited;
}

/** ORBIT_BENCH_GATEWAY_PROFILE=dir: `perf record` attached to the gateway (all its threads: the
 * JIT's compile threads and GC helpers too) for exactly each scenario's window, into
 * dir/<scenario>.gateway.perf.data; ORBIT_BENCH_GATEWAY_PERF_ARGS replaces the default on-CPU
 * sampling. For JIT frames by name run the gateway with ORBIT_BENCH_GATEWAY_NODE_ARGS='--perf-prof
 * --interpreted-frames-native-stack' and `perf inject --jit` the file (`-k 1`: the jitdump's
 * clock). Returns null when the variable is not set. */
export async function startGatewayProfile(gatewayPid: number | undefined, scenario: string): Promise<{ stop(): Promise<void> } | null> {
  const dir = process.env.ORBIT_BENCH_GATEWAY_PROFILE;
  if (!dir || gatewayPid === undefined) return null;
  fs.mkdirSync(dir, { recursive: true });
  const args = (process.env.ORBIT_BENCH_GATEWAY_PERF_ARGS ?? '-e cpu-clock -F 499 -g -k 1').split(/\s+/).filter(Boolean);
  const perf = spawn('perf', ['record', ...args, '-p', String(gatewayPid), '-o', path.join(dir, `${scenario}.gateway.perf.data`)], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 300)); // attached to every thread before the window opens
  return { stop: () => stopPerf(perf) };
}

/** Starts the window's profile, or returns null when ORBIT_BENCH_DB_PROFILE is not set. */
export async function startDbProfile(pool: mysql.Pool, mariadbPid: number | undefined, scenario: string): Promise<DbProfile | null> {
  const dir = process.env.ORBIT_BENCH_DB_PROFILE;
  if (!dir || mariadbPid === undefined) return null;
  fs.mkdirSync(dir, { recursive: true });
  const base = path.join(dir, scenario);
  const digests = await digestsOn(pool);
  if (digests) await pool.query('TRUNCATE performance_schema.events_statements_summary_by_digest');
  const handlers0 = await handlerCounters(pool);
  const perfArgs = (process.env.ORBIT_BENCH_PERF_ARGS ?? DEFAULT_PERF_ARGS).split(/\s+/).filter(Boolean);
  const perf =
    process.env.ORBIT_BENCH_PERF_ARGS === 'off'
      ? null
      : spawn('perf', ['record', ...perfArgs, '-p', String(mariadbPid), '-o', `${base}.perf.data`], { stdio: 'ignore' });
  // perf needs a moment to attach to every thread; the window must not start before it samples.
  await new Promise((r) => setTimeout(r, perf ? 300 : 0));
  return {
    async stop(tasks) {
      await stopPerf(perf);
      const handlers1 = await handlerCounters(pool);
      const handlers = Object.fromEntries([...handlers1].map(([k, v]) => [k, (v - (handlers0.get(k) ?? 0)) / tasks] as const).filter(([, v]) => v !== 0));
      let statements: Record<string, unknown>[] = [];
      if (digests) {
        const [rows] = await pool.query<RowDataPacket[]>(
          `SELECT SCHEMA_NAME, DIGEST_TEXT, COUNT_STAR, SUM_TIMER_WAIT, SUM_LOCK_TIME, SUM_ROWS_EXAMINED, SUM_ROWS_AFFECTED,
                  SUM_ROWS_SENT, SUM_SELECT_SCAN, SUM_SELECT_RANGE, SUM_NO_INDEX_USED, SUM_SORT_ROWS, SUM_CREATED_TMP_TABLES
             FROM performance_schema.events_statements_summary_by_digest ORDER BY SUM_TIMER_WAIT DESC`,
        );
        const perTask = (v: unknown) => Number(v) / tasks;
        statements = rows.map((r) => ({
          schema: r.SCHEMA_NAME,
          digest: r.DIGEST_TEXT,
          count: perTask(r.COUNT_STAR),
          timerUs: perTask(r.SUM_TIMER_WAIT) / 1e6,
          lockUs: perTask(r.SUM_LOCK_TIME) / 1e6,
          rowsExamined: perTask(r.SUM_ROWS_EXAMINED),
          rowsAffected: perTask(r.SUM_ROWS_AFFECTED),
          rowsSent: perTask(r.SUM_ROWS_SENT),
          fullScans: perTask(r.SUM_SELECT_SCAN),
          rangeScans: perTask(r.SUM_SELECT_RANGE),
          noIndexUsed: perTask(r.SUM_NO_INDEX_USED),
          sortRows: perTask(r.SUM_SORT_ROWS),
          tmpTables: perTask(r.SUM_CREATED_TMP_TABLES),
        }));
      }
      fs.writeFileSync(`${base}.digests.json`, JSON.stringify({ scenario, tasks, perTask: { handlers, statements } }, null, 2));
    },
  };
}
