// Real SDK worker processes (dist/bench/worker-proc.js) for end-to-end and chaos tests.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { packageRoot } from '../../server/paths.js';

export interface WorkerProcess {
  child: ChildProcess;
  lines: any[];
  ready: Promise<void>;
  kill9(): Promise<void>;
  stop(): Promise<number | null>;
}

const running = new Set<WorkerProcess>();
/** Every worker process this file spawned, stopped or not (for the end-of-file check). */
const spawned = new Set<ChildProcess>();

/** Spawns an SDK worker process: dist/bench/worker-proc.js by default, or another script of the
 * same line protocol (e.g. dist/bench/fenced-worker-proc.js). */
export function spawnWorker(
  url: string,
  token: string,
  queues: string[],
  env: Record<string, string> = {},
  script = 'dist/bench/worker-proc.js',
): WorkerProcess {
  return spawnWorkerCommand(process.execPath, [path.join(packageRoot(), script)], url, token, queues, env);
}

/** Spawns the Go SDK's worker process (worker-sdk-go/internal/cmd/workerproc, built to `bin` with
 * goBuild of support/go.ts): the same environment and line protocol as bench/worker-proc.ts and
 * bench/fenced-worker-proc.ts, and the same end-of-file leak checks. */
export function spawnGoWorker(bin: string, url: string, token: string, queues: string[], env: Record<string, string> = {}): WorkerProcess {
  return spawnWorkerCommand(bin, [], url, token, queues, env);
}

function spawnWorkerCommand(command: string, args: string[], url: string, token: string, queues: string[], env: Record<string, string>): WorkerProcess {
  const child = spawn(command, args, {
    env: { ...process.env, ORBIT_URL: url, ORBIT_TOKEN: token, WORKER_QUEUES: queues.join(','), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  spawned.add(child);
  const lines: any[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let onReady: () => void;
  const ready = new Promise<void>((r) => (onReady = r));
  readline.createInterface({ input: child.stdout! }).on('line', (l) => {
    try {
      const o = JSON.parse(l);
      lines.push(o);
      if (o.ev === 'ready') onReady();
    } catch {
      lines.push({ raw: l });
    }
  });
  readline.createInterface({ input: child.stderr! }).on('line', (l) => lines.push({ stderr: l }));
  const wp: WorkerProcess = {
    child,
    lines,
    ready,
    async kill9() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      running.delete(wp);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const c = await exited;
      running.delete(wp);
      return c;
    },
  };
  running.add(wp);
  return wp;
}

export async function killAllWorkers(): Promise<void> {
  await Promise.all([...running].map((w) => w.kill9()));
}

/** End-of-file check (after killAllWorkers): fails if an SDK worker process this file spawned is
 * still running; kills it first so the run continues cleanly. */
export async function assertNoWorkersRunning(): Promise<void> {
  const alive = [...spawned].filter((c) => c.exitCode === null && c.signalCode === null);
  await Promise.all(alive.map((c) => new Promise<void>((resolve) => (c.once('exit', () => resolve()), c.kill('SIGKILL')))));
  if (alive.length > 0)
    throw new Error(`${alive.length} SDK worker process(es) still running at the end of the file (pids ${alive.map((c) => c.pid).join(', ')})`);
}
