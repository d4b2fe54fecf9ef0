// What the SDK worker processes of the benchmark and the chaos tests (worker-proc.ts,
// fenced-worker-proc.ts) share: the worker's connection options read from their environment, the
// JSON lines they print for the process that spawned them, and the exit on a fatal error.
import type { Worker, WorkerOptions } from '@orbit/worker-sdk/worker';

/** ORBIT_URL, ORBIT_TOKEN, WORKER_QUEUES (comma-separated ids), WORKER_CAPACITY (else
 * `defaultCapacity`) and WORKER_PREFETCH (default 0), with a quick reconnect (from 50 ms, at most
 * 1 s apart): the chaos tests restart and kill gateways under these workers. */
export function workerOptionsFromEnv(defaultCapacity: number): Pick<WorkerOptions, 'url' | 'token' | 'queues' | 'capacity' | 'prefetch' | 'reconnect'> {
  const env = process.env;
  return {
    url: env.ORBIT_URL!,
    token: env.ORBIT_TOKEN!,
    queues: env.WORKER_QUEUES!.split(','),
    capacity: Number(env.WORKER_CAPACITY ?? defaultCapacity),
    prefetch: Number(env.WORKER_PREFETCH ?? 0),
    reconnect: { initialDelayMs: 50, maxDelayMs: 1000 },
  };
}

/** One JSON line on stdout: the spawning side reads them with readline. A pipe write is
 * synchronous, so a line is out even if the process is frozen or killed right after. */
export function printLine(o: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(o) + '\n');
}

/** A worker that stops for good prints {"ev":"fatal","message"} and exits 3. */
export function exitOnFatal(worker: Worker): void {
  worker.on('fatal', (err) => {
    printLine({ ev: 'fatal', message: err.message });
    process.exit(3);
  });
}
