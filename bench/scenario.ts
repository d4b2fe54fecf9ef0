// One end-to-end throughput scenario: producers submit over HTTP while SDK worker processes run
// the tasks (submit → assign → start → result committed), measured from the first submit to the
// last SUCCEEDED commit.
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../server/db/pool.js';
import { packageRoot } from '../server/paths.js';
import { globalStatus, percentile } from './stats.js';

export interface ScenarioSetup {
  url: string;
  token: string;
  pool: Pool;
  workers: number;
  capacity: number;
  producers: number;
}

export interface ScenarioSpec {
  name: string;
  count: number;
  /** null = unkeyed; else the number of distinct keys (task i gets key i % keys). */
  keys: number | null;
  /** Submissions per second (paced); undefined = as fast as producers go. */
  rate?: number;
  /** Submit everything first, then start the workers and the clock (no producer load while the
   * tasks run): isolates the dispatch path, e.g. a hot key's turnover. */
  preload?: boolean;
}

export interface ScenarioResult {
  name: string;
  tasks: number;
  seconds: number;
  tasksPerSec: number;
  submitToAssignP50: number;
  submitToAssignP99: number;
  resultToOkP50: number;
  resultToOkP99: number;
  commitsPerTask: number;
  fsyncsPerTask: number;
  /** Keyed scenarios: mean time from an attempt's release to the next grant of the same key (ms,
   * database clock) — the idle gap of a key between two holders. */
  keyHandoffMs: number;
}

async function api(url: string, token: string, method: string, p: string, body: unknown, key?: string): Promise<any> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  if (key) headers['idempotency-key'] = key;
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(url + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await res.json()) as any;
    if (res.status < 300) return json.data;
    if (res.status !== 503 || attempt > 50) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json.error)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function spawnWorkers(s: ScenarioSetup, queueId: string) {
  return Array.from({ length: s.workers }, () => {
    const child = spawn(process.execPath, [path.join(packageRoot(), 'dist/bench/worker-proc.js')], {
      env: { ...process.env, ORBIT_URL: s.url, ORBIT_TOKEN: s.token, WORKER_QUEUES: queueId, WORKER_CAPACITY: String(s.capacity), WORKER_LATENCY: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const latencies: number[] = [];
    let onReady!: () => void;
    const ready = new Promise<void>((r) => (onReady = r));
    readline.createInterface({ input: child.stdout! }).on('line', (l) => {
      const o = JSON.parse(l);
      if (o.ev === 'ready') onReady();
      if (o.ev === 'latency') latencies.push(...(o.result_ms as number[]));
    });
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    return { child, ready, latencies, exited };
  });
}

export async function runScenario(s: ScenarioSetup, spec: ScenarioSpec, progress: (line: string) => void): Promise<ScenarioResult> {
  const name = `bench-${spec.name}-${Date.now()}`;
  const queue = (await api(s.url, s.token, 'POST', '/v1/queues', { name, max_active_attempts: 100000, lease_seconds: 60 }, name)).queue;
  let workers: ReturnType<typeof spawnWorkers> = [];
  const startWorkers = async () => {
    workers = spawnWorkers(s, queue.id);
    await Promise.all(workers.map((w) => w.ready));
  };
  if (!spec.preload) await startWorkers();
  const before = await globalStatus(s.pool);
  let started = performance.now();
  let submitted = 0;
  let next = 0;
  const producer = async () => {
    for (;;) {
      const i = next++;
      if (i >= spec.count) return;
      if (spec.rate) {
        const due = started + (i / spec.rate) * 1000;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
      const body: Record<string, unknown> = { queue_id: queue.id, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: { i } };
      if (spec.keys !== null) body.concurrency_key = `${name}/${i % spec.keys}`; // keys unique per scenario: hand-off gaps stay within it
      await api(s.url, s.token, 'POST', '/v1/tasks', body, `${name}-${i}`);
      submitted++;
    }
  };
  const producing = Promise.all(Array.from({ length: s.producers }, producer));
  let done = 0;
  const tick = setInterval(() => {
    void s.pool
      .query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM tasks WHERE queue_id = ? AND state = 'SUCCEEDED'", [queue.id])
      .then(([rows]) => (done = Number(rows[0]!.n)))
      .catch(() => {});
    progress(`${spec.name}: submitted ${submitted}/${spec.count}, succeeded ${done}`);
  }, 1000);
  try {
    await producing;
    if (spec.preload) {
      await startWorkers();
      started = performance.now();
    }
    for (;;) {
      const [rows] = await s.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM tasks WHERE queue_id = ? AND state = 'SUCCEEDED'", [queue.id]);
      done = Number(rows[0]!.n);
      if (done >= spec.count) break;
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    clearInterval(tick);
  }
  const seconds = (performance.now() - started) / 1000;
  const after = await globalStatus(s.pool);
  for (const w of workers) w.child.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));
  const [lat] = await s.pool.query<RowDataPacket[]>(
    `SELECT TIMESTAMPDIFF(MICROSECOND, t.created_at, a.leased_at) / 1000 AS ms
       FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE t.queue_id = ? AND a.attempt_no = 1`,
    [queue.id],
  );
  const assign = lat.map((r) => Number(r.ms));
  const [handoff] = await s.pool.query<RowDataPacket[]>(
    `SELECT AVG(TIMESTAMPDIFF(MICROSECOND, prev.finished_at, a.leased_at)) / 1000 AS ms
       FROM attempts a JOIN attempts prev
         ON prev.namespace_id = a.namespace_id AND prev.concurrency_key = a.concurrency_key AND prev.concurrency_token = a.concurrency_token - 1
      WHERE a.queue_id = ? AND a.concurrency_key IS NOT NULL`,
    [queue.id],
  );
  const results = workers.flatMap((w) => w.latencies);
  return {
    name: spec.name,
    tasks: spec.count,
    seconds,
    tasksPerSec: spec.count / seconds,
    submitToAssignP50: percentile(assign, 50),
    submitToAssignP99: percentile(assign, 99),
    resultToOkP50: percentile(results, 50),
    resultToOkP99: percentile(results, 99),
    commitsPerTask: (after.commits - before.commits) / spec.count,
    fsyncsPerTask: (after.fsyncs - before.fsyncs) / spec.count,
    keyHandoffMs: handoff[0]?.ms === null || handoff[0]?.ms === undefined ? NaN : Number(handoff[0].ms),
  };
}
