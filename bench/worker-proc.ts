#!/usr/bin/env node
// A worker process built on the SDK, used by the chaos tests and the benchmark. Configured by
// environment; prints JSON lines: {"ev":"ready"} once connected, and with WORKER_LOG_RUNS=1 one
// {"ev":"run"} line per handler start and {"ev":"done"} per handler end.
//   ORBIT_URL, ORBIT_TOKEN, WORKER_QUEUES (comma-separated ids), WORKER_CAPACITY (default 8),
//   WORKER_PREFETCH (default 0),
//   WORKER_HANDLER (default "h"), WORKER_DELAY_MS (handler sleeps a random 0..N ms, default 0);
//   for the benchmark WORKER_LATENCY=1 and WORKER_PROGRESS_MS=N (below). A workflow step whose
//   params carry `items: N` returns an N-element array: the source of a for_each fan-out
//   (bench/workflow-load.ts); one whose params carry `fail: true` throws (a failed step, for the
//   compensation steps of test/chaos-workflows.test.ts); every other task returns {"ok":true}.
import { createWorker } from '@orbit/worker-sdk/worker';
import { exitOnFatal, printLine as out, workerOptionsFromEnv } from './worker-proc-env.js';

const env = process.env;
const delay = Number(env.WORKER_DELAY_MS ?? 0);
const logRuns = env.WORKER_LOG_RUNS === '1';
// WORKER_LATENCY=1: record handler-return → result.ok latency (ms) per attempt, printed as one
// {"ev":"latency"} line at exit (the benchmark's result→result.ok figure).
const trackLatency = env.WORKER_LATENCY === '1';
// WORKER_PROGRESS_MS=N: after results arrived, one {"ev":"progress","completed","t"} line (t =
// epoch ms of the latest result.ok): the benchmark detects a scenario's end from these, without
// polling the database it measures. Within N ms once the worker has nothing left in flight (how
// every scenario ends), else every 10 N ms (the stall check and the display need no more): a
// 20 ms interval woke each worker 50 times a second, more often than tasks came on hot keys, and
// that measurement overhead was counted in `workers`.
const progressMs = Number(env.WORKER_PROGRESS_MS ?? 0);
let lastResultAt = 0;
let reported = 0;
let progressTimer: NodeJS.Timeout | undefined;
let progressDue = Infinity;
let reportedAt = 0;
const doneAt = new Map<string, number>();
const resultLatencies: number[] = [];
let completed = 0;

const worker = createWorker({
  ...workerOptionsFromEnv(8),
  handlers: {
    [env.WORKER_HANDLER ?? 'h']: async (e) => {
      if (logRuns) out({ ev: 'run', task: e.task.id, attempt: e.attemptId, key: e.task.concurrencyKey, token: e.concurrencyToken?.toString(), t: Date.now() });
      if (delay > 0) await new Promise((r) => setTimeout(r, Math.random() * delay));
      if (logRuns) out({ ev: 'done', task: e.task.id, attempt: e.attemptId, t: Date.now() });
      if (trackLatency) doneAt.set(e.attemptId, performance.now());
      const params = (e.task.payload as { params?: { items?: unknown; fail?: unknown } } | null)?.params;
      if (params?.fail === true) throw new Error('planned failure');
      const items = params?.items;
      return typeof items === 'number' ? Array.from({ length: items }, (_, i) => i) : { ok: true };
    },
  },
});
let ready = false;
worker.on('connected', (h) => {
  // t and cpu_ms: where a drain's window opens for this process (bench/scenario.ts).
  const cpu = process.cpuUsage();
  if (!ready) out({ ev: 'ready', worker_id: h.worker_id, t: performance.timeOrigin + performance.now(), cpu_ms: (cpu.user + cpu.system) / 1000 });
  ready = true;
});
worker.on('result', (r) => {
  completed++;
  const now = performance.now();
  if (progressMs > 0) {
    lastResultAt = performance.timeOrigin + now;
    scheduleProgress(now);
  }
  const t0 = doneAt.get(r.attemptId);
  if (t0 !== undefined) {
    resultLatencies.push(now - t0);
    doneAt.delete(r.attemptId);
  }
});
exitOnFatal(worker);

/** Arms the progress line: soon when this result was the last in flight (it is still counted in
 * inFlight while its 'result' event runs), later otherwise; an earlier due time wins. A short
 * timer that finds new work in flight waits for the long one instead. */
function scheduleProgress(now: number): void {
  armProgress(now, worker.inFlight <= 1 ? progressMs : 10 * progressMs);
}

function armProgress(now: number, delay: number): void {
  if (progressDue <= now + delay) return;
  clearTimeout(progressTimer);
  progressDue = now + delay;
  progressTimer = setTimeout(() => {
    const at = performance.now();
    progressTimer = undefined;
    progressDue = Infinity;
    if (completed === reported) return;
    if (worker.inFlight > 0 && at - reportedAt < 10 * progressMs) return armProgress(at, reportedAt + 10 * progressMs - at);
    reported = completed;
    reportedAt = at;
    out({ ev: 'progress', completed, t: lastResultAt });
  }, delay);
  progressTimer.unref();
}
const stop = () => {
  if (trackLatency) out({ ev: 'latency', completed, result_ms: resultLatencies.map((x) => Math.round(x * 100) / 100) });
  worker.close({ timeoutMs: 8000 }).then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
