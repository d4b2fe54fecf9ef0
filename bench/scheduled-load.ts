// Scheduled-load scenario (docs/benchmarks.md "Schedules, renew flood, idle sessions"): N schedules firing every second
// for a while, next to ordinary producers submitting over HTTP and SDK worker processes running
// everything. Reports fire lag p50/p99 (fire time → task commit, both on the database clock), fires
// per second, the fire outcomes, and the ordinary tasks per second accepted meanwhile.
//
// The scenario reads the database only before and after the run (schedule ids, fire records and
// task times), so its bookkeeping does not load the database it measures.
//
// Wiring (bench/run.ts): after the other scenarios, with the run's gateway and pool,
//   const s = await runScheduledLoad({ url, token, pool }, quick ? { schedules: 50, seconds: 15 } : {}, progress);
// and report s.name, s.fires, s.firesPerSec, s.lagP50Ms, s.lagP99Ms (+ s.ordinaryTasksPerSec).
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../server/db/pool.js';
import { percentile } from './stats.js';
import { workerCommand } from './procs.js';

export interface ScheduledLoadSetup {
  url: string;
  token: string;
  pool: Pool;
}

export interface ScheduledLoadOptions {
  /** Schedules with every_seconds: 1 (default 200). */
  schedules?: number;
  /** Length of the measured window in seconds (default 60). */
  seconds?: number;
  /** Concurrent ordinary producers, one POST /v1/tasks at a time each (default 8). */
  producers?: number;
  /** SDK worker processes and their capacity (default 2 × 64). */
  workers?: number;
  capacity?: number;
}

export interface ScheduledLoadResult {
  name: string;
  schedules: number;
  seconds: number;
  fires: number;
  firesPerSec: number;
  /** Fire time → task commit (database clock), over the created fires of the window. */
  lagP50Ms: number;
  lagP99Ms: number;
  lagMaxMs: number;
  outcomes: Record<string, number>;
  ordinaryTasks: number;
  ordinaryTasksPerSec: number;
}

/** A POST with its Idempotency-Key; a 503 (busy database) is retried with the same key, so the
 * command executes once. Returns the envelope's data. */
export async function api(url: string, token: string, p: string, body: unknown, key: string): Promise<any> {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(url + p, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as any;
    if (res.status < 300) return json.data;
    if (res.status !== 503 || attempt > 50) throw new Error(`POST ${p}: ${res.status} ${JSON.stringify(json.error)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs `fn(i)` for i in [0, n) with at most `parallel` in flight. */
async function inParallel(n: number, parallel: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, parallel) }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

function spawnWorkers(url: string, token: string, queueId: string, n: number, capacity: number): Promise<ChildProcess[]> {
  return Promise.all(
    Array.from({ length: n }, () => {
      const [command, args] = workerCommand();
      const child = spawn(command, args, {
        env: { ...process.env, ORBIT_URL: url, ORBIT_TOKEN: token, WORKER_QUEUES: queueId, WORKER_CAPACITY: String(capacity) },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      return new Promise<ChildProcess>((resolve, reject) => {
        child.once('exit', (c) => reject(new Error(`worker exited ${c}`)));
        readline.createInterface({ input: child.stdout! }).on('line', (l) => {
          if (l.includes('"ready"')) resolve(child);
        });
      });
    }),
  );
}

const ms = (v: string) => Date.parse(String(v).replace(' ', 'T') + 'Z');

export async function runScheduledLoad(
  setup: ScheduledLoadSetup,
  o: ScheduledLoadOptions = {},
  progress: (l: string) => void = () => {},
): Promise<ScheduledLoadResult> {
  const n = o.schedules ?? 200;
  const seconds = o.seconds ?? 60;
  const { url, token, pool } = setup;
  const run = Date.now().toString(36);
  const queue = (await api(url, token, '/v1/queues', { name: `scheduled-load-${run}` }, `scheduled-load-queue-${run}`)).queue;
  const workers = await spawnWorkers(url, token, queue.id, o.workers ?? 2, o.capacity ?? 64);
  try {
    progress(`scheduled load: creating ${n} schedules`);
    const ids: string[] = new Array(n);
    await inParallel(n, 16, async (i) => {
      const body = {
        name: `load-${run}-${i}`,
        version: { calendar: { every_seconds: 1 }, task: { queue_id: queue.id, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: { i } } },
      };
      ids[i] = (await api(url, token, '/v1/schedules', body, `scheduled-load-${run}-${i}`)).schedule.id;
    });
    // The window starts once every schedule exists (database clock), plus a second to settle.
    const [[start]] = (await pool.query('SELECT UTC_TIMESTAMP(3) + INTERVAL 1 SECOND AS t')) as unknown as [[{ t: string }]];
    const from = ms(start.t);
    const until = Date.now() + 1000 + seconds * 1000;
    let ordinary = 0;
    let seq = 0;
    const producing = inParallel(o.producers ?? 8, o.producers ?? 8, async () => {
      while (Date.now() < until) {
        const i = seq++;
        await api(
          url,
          token,
          '/v1/tasks',
          { queue_id: queue.id, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: { i } },
          `scheduled-load-task-${run}-${i}`,
        );
        ordinary++;
      }
    });
    const ticker = setInterval(
      () => progress(`scheduled load: ${Math.max(0, Math.round((until - Date.now()) / 1000))} s left, ${ordinary} ordinary tasks`),
      1000,
    );
    await producing;
    clearInterval(ticker);
    const to = from + seconds * 1000;
    progress('scheduled load: pausing the schedules');
    await inParallel(n, 16, async (i) => {
      await api(url, token, `/v1/schedules/${ids[i]}:pause`, { expected_revision: '1' }, `scheduled-load-pause-${run}-${i}`);
    });

    const [fires] = await pool.query<RowDataPacket[]>(
      `SELECT f.outcome, f.scheduled_for, t.created_at FROM schedule_fires f LEFT JOIN tasks t ON t.id = f.task_id
        WHERE f.schedule_id IN (${ids.map(() => '?').join(',')}) AND f.scheduled_for >= ? AND f.scheduled_for < ?`,
      [...ids, new Date(from).toISOString().slice(0, 23).replace('T', ' '), new Date(to).toISOString().slice(0, 23).replace('T', ' ')],
    );
    const outcomes: Record<string, number> = {};
    const lags: number[] = [];
    for (const f of fires) {
      outcomes[f.outcome] = (outcomes[f.outcome] ?? 0) + 1;
      if (f.created_at) lags.push(ms(f.created_at) - ms(f.scheduled_for));
    }
    return {
      name: `scheduled-${n}x1s`,
      schedules: n,
      seconds,
      fires: fires.length,
      firesPerSec: fires.length / seconds,
      lagP50Ms: percentile(lags, 50),
      lagP99Ms: percentile(lags, 99),
      lagMaxMs: lags.length ? Math.max(...lags) : NaN,
      outcomes,
      ordinaryTasks: ordinary,
      ordinaryTasksPerSec: ordinary / seconds,
    };
  } finally {
    for (const w of workers) w.kill('SIGTERM');
    await Promise.all(workers.map((w) => new Promise((r) => (w.exitCode !== null ? r(null) : w.once('exit', r)))));
  }
}
