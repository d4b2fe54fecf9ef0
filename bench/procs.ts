// The benchmark's child processes: SDK worker processes (bench/worker-proc.ts, or with --workers=go
// the Go SDK's worker-sdk-go/internal/cmd/workerproc) that report results on stdout, and producer processes (bench/producer-proc.ts) driven over an IPC channel.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { packageRoot } from '../server/paths.js';
import { cpuSnapshot } from './cpu.js';
import type { ProducerJob } from './producer-proc.js';

export interface WorkerProc {
  child: ChildProcess;
  ready: Promise<void>;
  /** result.ok frames received so far, and the epoch ms of the latest. */
  completed: number;
  lastResultAt: number;
  /** Epoch ms of its first connection and its CPU ms then (NaN until it is ready). */
  connectedAt: number;
  cpuMsAtConnect: number;
  /** handler return → result.ok (ms), filled in at exit. */
  latencies: number[];
  exited: Promise<void>;
}

function exitedPromise(child: ChildProcess): Promise<void> {
  return new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', () => r())));
}

/** Calls `f` with each JSON line a child prints (other lines are skipped). */
export function onJsonLines(input: NodeJS.ReadableStream, f: (o: any) => void): void {
  readline.createInterface({ input }).on('line', (l) => {
    let o: unknown;
    try {
      o = JSON.parse(l);
    } catch {
      return;
    }
    f(o);
  });
}

/** The Go worker binary (`--workers=go`: worker-sdk-go/internal/cmd/workerproc, built by run.ts),
 * or null for Node's bench/worker-proc.js. Both read the same environment and print the same lines. */
let goWorkerBin: string | null = null;

/** Makes every scenario spawn the Go SDK's worker process at `bin` instead of Node's. */
export function useGoWorkers(bin: string): void {
  goWorkerBin = bin;
}

/** The command and arguments of one bench worker process (Node's or, with useGoWorkers, Go's). */
export function workerCommand(): [string, string[]] {
  if (goWorkerBin) return [goWorkerBin, []];
  // ORBIT_BENCH_CPU_PROF=dir: each worker process writes a V8 CPU profile to dir/workers at exit.
  const dir = process.env.ORBIT_BENCH_CPU_PROF;
  const prof = dir ? ['--cpu-prof', `--cpu-prof-dir=${path.join(dir, 'workers')}`] : [];
  // ORBIT_BENCH_WORKER_NODE_ARGS='--perf-prof --interpreted-frames-native-stack': more node/V8
  // options for the worker processes (as ORBIT_BENCH_GATEWAY_NODE_ARGS for the gateway), e.g. to
  // attribute their on-CPU samples with `perf record -p` + `perf inject --jit`.
  prof.push(...(process.env.ORBIT_BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean));
  return [process.execPath, [...prof, path.join(packageRoot(), 'dist/bench/worker-proc.js')]];
}

export function spawnWorkers(url: string, token: string, queueId: string, count: number, capacity: number, onProgress: () => void, prefetch = 0): WorkerProc[] {
  const [command, args] = workerCommand();
  const prof = process.env.ORBIT_BENCH_CPU_PROF;
  return Array.from({ length: count }, (_, i) => {
    const child = spawn(command, args, {
      env: {
        ...process.env,
        // The Go worker's own CPU profile (Node's come from --cpu-prof, see workerCommand).
        ...(goWorkerBin && prof ? { WORKER_CPU_PROFILE: path.join(prof, `go-worker-${i}.pprof`) } : {}),
        ORBIT_URL: url,
        ORBIT_TOKEN: token,
        WORKER_QUEUES: queueId,
        WORKER_CAPACITY: String(capacity),
        WORKER_PREFETCH: String(prefetch),
        WORKER_LATENCY: '1',
        WORKER_PROGRESS_MS: '20',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = exitedPromise(child);
    const w: WorkerProc = { child, ready: Promise.resolve(), completed: 0, lastResultAt: 0, connectedAt: NaN, cpuMsAtConnect: NaN, latencies: [], exited };
    w.ready = new Promise<void>((resolve, reject) => {
      void exited.then(() => reject(new Error(`worker process ${child.pid} exited before it was ready`)));
      onJsonLines(child.stdout!, (o) => {
        if (o.ev === 'ready') {
          // A worker whose line lacks them (the Go worker's): the moment it is read, /proc then.
          w.connectedAt = Number(o.t ?? performance.timeOrigin + performance.now());
          w.cpuMsAtConnect = Number(o.cpu_ms ?? cpuSnapshot({ w: [child.pid] }).w);
          resolve();
        } else if (o.ev === 'progress') {
          w.completed = o.completed;
          w.lastResultAt = o.t;
          onProgress();
        } else if (o.ev === 'latency') w.latencies.push(...(o.result_ms as number[]));
        else if (o.ev === 'fatal') reject(new Error(`worker fatal: ${o.message}`));
      });
    });
    w.ready.catch(() => {});
    return w;
  });
}

export async function stopWorkers(ws: WorkerProc[]): Promise<void> {
  for (const w of ws) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGTERM');
  await Promise.all(ws.map((w) => w.exited));
}

export interface ProducerProc {
  child: ChildProcess;
  ready: Promise<void>;
  /** Tasks submitted so far by the current job (a scenario's warm-up, then its measured window). */
  submitted: number;
  /** Its requests' response times (ms) in the current job, filled in when the job is done. */
  responseMs: number[];
  exited: Promise<void>;
  /** Starts a job; resolves when the producer has submitted its share, rejects on its error or
   * exit. One job at a time. */
  go(job: ProducerJob): Promise<void>;
}

export function spawnProducers(count: number, onProgress: () => void): ProducerProc[] {
  return Array.from({ length: count }, () => {
    const child = fork(path.join(packageRoot(), 'dist/bench/producer-proc.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const exited = exitedPromise(child);
    let onReady!: () => void;
    let job: { resolve: () => void; reject: (e: Error) => void } | null = null;
    const fail = (e: Error) => {
      job?.reject(e);
      job = null;
    };
    const p: ProducerProc = {
      child,
      ready: new Promise<void>((resolve, reject) => {
        onReady = resolve;
        void exited.then(() => reject(new Error(`producer process ${child.pid} exited before it was ready`)));
      }),
      submitted: 0,
      responseMs: [],
      exited,
      go: (j) => {
        if (job) throw new Error('producer: a job is already running');
        p.submitted = 0;
        const done = new Promise<void>((resolve, reject) => (job = { resolve, reject }));
        done.catch(() => {});
        child.send(j);
        return done;
      },
    };
    p.ready.catch(() => {});
    child.on('message', (m: any) => {
      if (m.ev === 'ready') onReady();
      else if (m.ev === 'progress' || m.ev === 'done') {
        p.submitted = m.submitted;
        onProgress();
        if (m.ev === 'done') {
          p.responseMs = m.responseMs ?? [];
          job?.resolve();
          job = null;
        }
      } else if (m.ev === 'error') fail(new Error(`producer: ${m.message}`));
    });
    void exited.then(() => fail(new Error(`producer process ${child.pid} exited (code ${child.exitCode})`)));
    return p;
  });
}

export async function stopProducers(ps: ProducerProc[]): Promise<void> {
  for (const p of ps) if (p.child.connected) p.child.disconnect();
  await Promise.all(ps.map((p) => p.exited));
}
