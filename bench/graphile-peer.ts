// graphile-worker's drain as the peer of Orbit's `drain` scenario, in the same bench run: a private
// PostgreSQL cluster from the machine's packages (Debian's `postgresql`), listening on 127.0.0.1
// only, and bench/peers/graphile-worker/drain.mjs with the peer's own node_modules (never a
// dependency of Orbit). CPU of the cluster's process tree and of the runner process over the
// window, read from /proc as for Orbit's processes (bench/cpu.ts).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { packageRoot } from '../server/paths.js';
import { cpuSnapshot } from './cpu.js';
import { onJsonLines } from './procs.js';

export const PEER_DIR = 'bench/peers/graphile-worker';
const INSTALL_HINT = `npm install --prefix ${PEER_DIR} (or pass --peers)`;

export interface PeerDrainResult {
  name: string;
  /** What the runner was given beyond its connection and task list. */
  options: string;
  workers: number;
  concurrency: number;
  warmupTasks: number;
  tasks: number;
  seconds: number;
  tasksPerSec: number;
  cpuMsPerTask: { postgres: number; runner: number; total: number };
  /** pg_stat_database over the window: committed transactions and tuples inserted + updated +
   * deleted, per task (the bench's own polls subtracted). */
  transactionsPerTask: number;
  tuplesWrittenPerTask: number;
}

export interface PeerOutcome {
  results: PeerDrainResult[];
  /** Why the peer did not run (one line), or null. */
  skipped: string | null;
  postgresVersion: string | null;
}

const MODES = [
  { mode: 'defaults', name: 'graphile-worker defaults', options: 'concurrency 24, else as shipped (pool of 10)' },
  { mode: 'batched', name: 'graphile-worker batched', options: 'concurrency 24, localQueue {size: 500}, completeJobBatchDelay 0, failJobBatchDelay 0' },
] as const;

/** The newest PostgreSQL server's bin directory (ORBIT_BENCH_PG_BIN, else Debian's layout). */
function postgresBin(): string | null {
  const given = process.env.ORBIT_BENCH_PG_BIN;
  if (given) return fs.existsSync(path.join(given, 'postgres')) ? given : null;
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((v) => fs.existsSync(path.join(root, v, 'bin/postgres'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], 'bin') : null;
}

/** PostgreSQL refuses to run as root: as root, its commands run as the `postgres` user. */
function asUser(): { wrap: (cmd: string[]) => string[]; uid: number | null } | null {
  if (process.getuid?.() !== 0) return { wrap: (c) => c, uid: null };
  const id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  if (id.status !== 0) return null;
  return { wrap: (c) => ['runuser', '-u', 'postgres', '--', ...c], uid: Number(id.stdout.trim()) };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

interface Cluster {
  child: ChildProcess;
  dsn: string;
  version: string;
  stop(): Promise<void>;
}

async function startCluster(bin: string, user: NonNullable<ReturnType<typeof asUser>>): Promise<Cluster> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-bench-pg-'));
  if (user.uid !== null) fs.chownSync(dir, user.uid, -1);
  const data = path.join(dir, 'data');
  const [cmd, ...args] = user.wrap([path.join(bin, 'initdb'), '-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  const init = spawnSync(cmd!, args, { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`initdb: ${init.stderr.trim().split('\n').slice(-3).join(' ')}`);
  const port = await freePort();
  // Durable as shipped (fsync, synchronous_commit on), as the bench's MariaDB is.
  const [pcmd, ...pargs] = user.wrap([path.join(bin, 'postgres'), '-D', data, '-k', dir, '-h', '127.0.0.1', '-p', String(port)]);
  const child = spawn(pcmd!, pargs, { stdio: ['ignore', 'ignore', 'pipe'] });
  const tail: string[] = [];
  let version = '';
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (c) => reject(new Error(`postgres exited ${c}: ${tail.join(' | ')}`)));
    readline.createInterface({ input: child.stderr! }).on('line', (l) => {
      tail.push(l);
      if (tail.length > 5) tail.shift();
      const v = /starting (PostgreSQL \S+)/.exec(l);
      if (v) version = v[1]!;
      if (l.includes('ready to accept connections')) resolve();
    });
  });
  const exited = new Promise<void>((r) => (child.exitCode !== null ? r() : child.once('exit', () => r())));
  return {
    child,
    dsn: `postgres://postgres@127.0.0.1:${port}/postgres`,
    version,
    stop: async () => {
      // SIGINT to the postmaster itself (its pid file): a fast shutdown, also under runuser.
      try {
        process.kill(Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]), 'SIGINT');
      } catch {
        child.kill('SIGINT');
      }
      await exited;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One mode's drain: the runner adds its backlog, then the window from "go" to "done". */
async function drainOnce(cluster: Cluster, m: (typeof MODES)[number], tasks: number, warmupTasks: number, stallMs: number): Promise<PeerDrainResult> {
  const script = path.join(packageRoot(), PEER_DIR, 'drain.mjs');
  const child = spawn(process.execPath, [script], {
    env: {
      ...process.env,
      NO_LOG_SUCCESS: '1',
      PEER_DSN: cluster.dsn,
      PEER_DB: `drain_${m.mode}_${Date.now()}`,
      PEER_JOBS: String(tasks),
      PEER_WARMUP: String(warmupTasks),
      PEER_MODE: m.mode,
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const groups = () => ({ postgres: [cluster.child.pid], runner: [child.pid] });
  let cpu0 = { postgres: 0, runner: 0 };
  let cpu1 = cpu0;
  let done = { start: 0, end: 0 };
  const timer = setTimeout(() => child.kill('SIGKILL'), stallMs);
  try {
    const stats = await new Promise<{ xact: number; tuples_written: number }>((resolve, reject) => {
      child.once('exit', (c) => reject(new Error(`${m.name}: runner exited ${c}`)));
      onJsonLines(child.stdout!, (o) => {
        if (o.ev === 'added') {
          cpu0 = cpuSnapshot(groups());
          child.stdin!.write('go\n');
        } else if (o.ev === 'done') {
          cpu1 = cpuSnapshot(groups());
          done = o;
          child.stdin!.write('stop\n');
        } else if (o.ev === 'stats') resolve(o);
      });
    });
    const seconds = (done.end - done.start) / 1000;
    const postgres = (cpu1.postgres - cpu0.postgres) / tasks;
    const runner = (cpu1.runner - cpu0.runner) / tasks;
    return {
      name: m.name,
      options: m.options,
      workers: 1,
      concurrency: 24,
      warmupTasks,
      tasks,
      seconds,
      tasksPerSec: tasks / seconds,
      cpuMsPerTask: { postgres, runner, total: postgres + runner },
      transactionsPerTask: stats.xact / tasks,
      tuplesWrittenPerTask: stats.tuples_written / tasks,
    };
  } finally {
    clearTimeout(timer);
    if (child.exitCode === null) child.kill();
  }
}

/** Both modes' drains of `tasks` jobs on one private cluster, or the one-line reason they did not
 * run. `install`: install the peer's packages when they are missing (npm, into its own folder). */
export async function runGraphilePeer(o: { tasks: number; warmupTasks: number; install: boolean; say: (l: string) => void }): Promise<PeerOutcome> {
  const skip = (why: string): PeerOutcome => {
    o.say(`graphile-worker peer skipped: ${why}`);
    return { results: [], skipped: why, postgresVersion: null };
  };
  const dir = path.join(packageRoot(), PEER_DIR);
  if (!fs.existsSync(path.join(dir, 'node_modules/graphile-worker/package.json'))) {
    if (!o.install) return skip(`its packages are not installed: ${INSTALL_HINT}`);
    o.say(`graphile-worker peer: npm install --prefix ${PEER_DIR}`);
    const r = spawnSync('npm', ['install', '--prefix', dir, '--no-audit', '--no-fund', '--loglevel=error'], { stdio: 'inherit' });
    if (r.status !== 0) return skip(`npm install --prefix ${PEER_DIR} failed (${r.status})`);
  }
  const bin = postgresBin();
  if (!bin) return skip('no PostgreSQL server found: apt-get install -y postgresql (Debian), or ORBIT_BENCH_PG_BIN=<its bin directory>');
  const user = asUser();
  if (!user) return skip("running as root and no `postgres` user to run PostgreSQL as (Debian's postgresql package creates it)");
  let cluster: Cluster;
  try {
    cluster = await startCluster(bin, user);
  } catch (err) {
    return skip(`PostgreSQL did not start: ${(err as Error).message}`);
  }
  const results: PeerDrainResult[] = [];
  try {
    for (const m of MODES) {
      const r = await drainOnce(cluster, m, o.tasks, o.warmupTasks, 300_000);
      o.say(
        `${r.name}: ${r.tasks} jobs drained in ${r.seconds.toFixed(2)} s = ${Math.round(r.tasksPerSec)} tasks/s, ${r.cpuMsPerTask.total.toFixed(3)} CPU ms per task`,
      );
      results.push(r);
    }
  } catch (err) {
    return { ...skip(`failed: ${(err as Error).message}`), results };
  } finally {
    await cluster.stop();
  }
  return { results, skipped: null, postgresVersion: cluster.version };
}
