// A private MariaDB/MySQL server run as a child process: used by `npm start` when
// ORBIT_MYSQL_DSN is unset, by the test setup and by the benchmark. Loopback only, its own port
// and socket, data in a folder of the caller's choice.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import mysql from 'mysql2/promise';

const SEARCH_DIRS = ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin', '/usr/libexec', '/usr/local/mysql/bin'];

export interface EmbeddedOptions {
  dataDir: string;
  /** TCP port; 0 = pick a free one. */
  port?: number;
  /** Extra server options, e.g. `--innodb-flush-log-at-trx-commit=2` for tests. */
  serverArgs?: string[];
  /** Progress lines go here (default: stderr). */
  log?: (line: string) => void;
  /** Install Debian's mariadb-server when no server binary exists and we can (default true). */
  install?: boolean;
}

export interface EmbeddedServer {
  port: number;
  socket: string;
  /** DSN for the `orbit` user on database `db`. */
  dsn(db: string): string;
  /** Admin DSN (root over the socket) is not exposed; the orbit user has every privilege. */
  child: ChildProcess;
  stop(): Promise<void>;
  /** kill -9 the server (tests of database restarts). */
  kill(): void;
  /** Start again on the same port and data directory after stop()/kill(). */
  restart(): Promise<void>;
}

export function which(names: string[]): string | null {
  const dirs = [...(process.env.PATH ?? '').split(':').filter(Boolean), ...SEARCH_DIRS];
  for (const name of names) {
    for (const d of dirs) {
      const p = path.join(d, name);
      try {
        fs.accessSync(p, fs.constants.X_OK);
        return p;
      } catch {
        /* next */
      }
    }
  }
  return null;
}

export function findServerBinary(): string | null {
  return which(['mariadbd', 'mysqld']);
}

/** Installs Debian's mariadb-server non-interactively, without starting the system service. */
function installMariaDb(log: (l: string) => void): void {
  aptInstall(['mariadb-server'], log, 'no MariaDB/MySQL server found: install one with `sudo apt-get install -y mariadb-server` (or set ORBIT_MYSQL_DSN)');
}

/** Installs Debian packages non-interactively (root with apt-get only; else throws `cannot`),
 * without starting any service they bring: the tests and `npm start` run their own servers. */
export function aptInstall(packages: string[], log: (l: string) => void, cannot: string): void {
  const apt = which(['apt-get']);
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!apt || !isRoot) throw new Error(cannot);
  const names = packages.join(' ');
  log(`installing ${names} with apt-get (one time, about a minute)...`);
  // policy-rc.d exit 101 stops a package from starting its system-wide service (we run our own
  // private server); only created when absent, and removed afterwards.
  const policy = '/usr/sbin/policy-rc.d';
  const ownPolicy = !fs.existsSync(policy);
  if (ownPolicy) fs.writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 });
  try {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const upd = spawnSync(apt, ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
    if (upd.status !== 0) throw new Error(`apt-get update failed; run \`apt-get install -y ${names}\` by hand`);
    const inst = spawnSync(apt, ['install', '-y', '-qq', '--no-install-recommends', ...packages], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env,
    });
    if (inst.status !== 0) throw new Error(`apt-get install ${names} failed; run it by hand`);
  } finally {
    if (ownPolicy) fs.rmSync(policy, { force: true });
  }
  log(`${names} installed`);
}

/** The port of the previous run on this data directory when it is free again (so a DSN written
 * down stays valid across restarts), else any free port. */
async function lastPortOrFree(dataDir: string): Promise<number> {
  const file = path.join(dataDir, 'port');
  const last = Number(fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : NaN);
  if (Number.isInteger(last) && last > 0 && last < 65536 && (await isFree(last))) return last;
  return freePort();
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function initDataDir(binary: string, dataDir: string, log: (l: string) => void): void {
  const installDb = which(['mariadb-install-db', 'mysql_install_db']);
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  fs.mkdirSync(dataDir, { recursive: true });
  log(`initializing database files in ${dataDir}`);
  let res;
  if (installDb && /mariadb|mysql_install_db/.test(path.basename(installDb)) && path.basename(binary) !== 'mysqld-mysql') {
    // --auth-root-socket-user: the OS user running this gets a socket-authenticated admin account
    // (root@localhost only works for the OS user root).
    const args = [
      '--no-defaults',
      `--datadir=${dataDir}`,
      '--auth-root-authentication-method=socket',
      `--auth-root-socket-user=${socketUser()}`,
      '--skip-test-db',
      '--skip-name-resolve',
      // --force: a fresh Debian root has no /etc/hosts, and install-db refuses to run when neither
      // the hostname nor localhost resolves; the server itself runs with --skip-name-resolve.
      '--force',
    ];
    if (isRoot) args.push('--user=root');
    res = spawnSync(installDb, args, { encoding: 'utf8' });
    if (res.status !== 0 && /unknown (option|variable)/i.test(res.stderr + res.stdout)) {
      // MySQL's mysqld --initialize-insecure path (no mariadb-install-db options).
      res = spawnSync(binary, ['--no-defaults', '--initialize-insecure', `--datadir=${dataDir}`, ...(isRoot ? ['--user=root'] : [])], { encoding: 'utf8' });
    }
  } else {
    res = spawnSync(binary, ['--no-defaults', '--initialize-insecure', `--datadir=${dataDir}`, ...(isRoot ? ['--user=root'] : [])], { encoding: 'utf8' });
  }
  if (res.status !== 0) {
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`database initialization failed: ${(res.stderr || res.stdout || '').trim().split('\n').slice(-3).join(' | ')}`);
  }
}

/** The OS user name: mariadb-install-db gives it a unix_socket admin account. */
function socketUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return 'root';
  }
}

/** Admin connection over the socket: as the OS user's own account (MariaDB initialized by this
 * code), else as root (an older data directory, MySQL's --initialize-insecure). */
async function adminConnection(socket: string, dataDir?: string): Promise<mysql.Connection> {
  let last: unknown;
  for (const user of [...new Set([socketUser(), 'root'])]) {
    try {
      return await mysql.createConnection({ socketPath: socket, user });
    } catch (err) {
      last = err;
      const errno = (err as { errno?: number }).errno;
      if (errno !== 1045 && errno !== 1698) throw err; // not an access refusal: the server is not up yet
    }
  }
  // Access refused for every account: the files belong to another OS user's initialization.
  // Waiting cannot fix that; say how to.
  const dir = dataDir ?? path.dirname(socket);
  throw new AccessDenied(
    `the database in ${dir} was initialized by another OS user and refuses ${socketUser()}: run npm start as that user, or start afresh with \`rm -rf ${dir}\` (${(last as Error).message})`,
  );
}

class AccessDenied extends Error {}

async function waitConnectable(socket: string, child: ChildProcess, logFile: string, timeoutMs: number, dataDir?: string): Promise<void> {
  const until = Date.now() + timeoutMs;
  let exited = false;
  child.once('exit', () => (exited = true));
  while (Date.now() < until) {
    if (exited) break;
    try {
      const c = await adminConnection(socket, dataDir);
      await c.end();
      return;
    } catch (err) {
      if (err instanceof AccessDenied) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const tail = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').split('\n').slice(-8).join('\n') : '';
  throw new Error(`database server did not become ready${exited ? ' (it exited)' : ''}; log tail:\n${tail}`);
}

function procArgs(pid: number): string[] | null {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return null;
  }
}

function parentPid(pid: number): number | null {
  try {
    // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces, so split after ')'.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

/** True while `pid` runs (a zombie waiting for a parent that never reaps it counts as gone). */
function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    /* no /proc entry: gone (or no /proc at all: ask the kernel) */
  }
  if (!fs.existsSync('/proc/self/stat')) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
  return false;
}

/**
 * A server from an earlier run that was killed with -9 keeps running (a child outlives a SIGKILLed
 * parent) and holds the data directory. When the pid file names a live server on this data
 * directory whose launcher is gone, stop it; when its launcher is still alive, another orbit is
 * using this folder and starting a second server on it would fail or corrupt it: refuse.
 */
async function stopLeftoverServer(dataDir: string, files: string, log: (l: string) => void): Promise<void> {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(path.join(dataDir, 'mysqld.pid'), 'utf8').trim());
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) return;
  const args = procArgs(pid);
  if (!args || !args.includes(`--datadir=${files}`)) return; // gone, or the pid was reused
  const ppid = parentPid(pid);
  const parentArgs = ppid && ppid > 1 ? procArgs(ppid) : null;
  if (ppid !== process.pid && parentArgs && parentArgs.some((a) => /start-embedded|global-setup|vitest|bench/.test(a))) {
    throw new Error(`the database in ${dataDir} is in use by another orbit process (pid ${ppid}); stop it first`);
  }
  log(`stopping a database server left running by an earlier run (pid ${pid})`);
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const until = Date.now() + 30_000;
  while (isAlive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  if (isAlive(pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    while (isAlive(pid)) await new Promise((r) => setTimeout(r, 50));
  }
}

const ORBIT_USER = 'orbit';
const ORBIT_PASSWORD = 'orbit-local';

/** Starts (initializing and installing when needed) a private server. */
export async function startEmbeddedMariaDb(opts: EmbeddedOptions): Promise<EmbeddedServer> {
  const log = opts.log ?? ((l: string) => process.stderr.write(l + '\n'));
  let binary = findServerBinary();
  if (!binary) {
    if (opts.install === false) throw new Error('no MariaDB/MySQL server found: run `apt-get install -y mariadb-server`');
    installMariaDb(log);
    binary = findServerBinary();
    if (!binary) throw new Error('mariadb-server installed but no mariadbd found on PATH');
  }
  const dataDir = path.resolve(opts.dataDir);
  const files = path.join(dataDir, 'data');
  if (!fs.existsSync(path.join(files, 'mysql'))) {
    // mariadb-install-db crashes now and then (seen here: a segfault in about 1 run of 20 while
    // other servers start on the machine); a clean retry succeeds.
    for (let attempt = 1; ; attempt++) {
      fs.rmSync(files, { recursive: true, force: true });
      try {
        initDataDir(binary, files, log);
        break;
      } catch (err) {
        if (attempt >= 3) throw err;
        log(`${(err as Error).message.split('\n')[0]}; retrying`);
      }
    }
  }
  // Unix socket paths are limited to 107 bytes; fall back to a short temp path.
  let socket = path.join(dataDir, 'mysqld.sock');
  if (Buffer.byteLength(socket) > 100) socket = path.join('/tmp', `orbit-${process.pid}-${Date.now()}.sock`);
  const port = opts.port && opts.port > 0 ? opts.port : await lastPortOrFree(dataDir);
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const logFile = path.join(dataDir, 'server.log');

  const args = [
    '--no-defaults',
    `--datadir=${files}`,
    `--socket=${socket}`,
    `--port=${port}`,
    '--bind-address=127.0.0.1',
    `--pid-file=${path.join(dataDir, 'mysqld.pid')}`,
    `--log-error=${logFile}`,
    '--skip-name-resolve',
    '--character-set-server=utf8mb4',
    '--collation-server=utf8mb4_general_ci',
    '--max-connections=1000',
    '--innodb-buffer-pool-size=256M',
    '--skip-log-bin',
    // A known packet limit, whatever the server's compiled-in default (MariaDB 16 MiB, MySQL 8
    // 64 MiB): the gateway's statement budget derives from it (db/packet-budget.ts).
    '--max-allowed-packet=16M',
    ...(isRoot ? ['--user=root'] : []),
    ...(opts.serverArgs ?? []),
  ];

  await stopLeftoverServer(dataDir, files, log);

  const state: { child: ChildProcess } = { child: undefined as unknown as ChildProcess };
  const launch = async () => {
    const child = spawn(binary!, args, { stdio: 'ignore', detached: false });
    state.child = child;
    // Whatever way this process exits (process.exit on an error, the shutdown deadline), the
    // server is asked to stop with it. Only kill -9 escapes this; stopLeftoverServer covers it.
    const onExit = () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    };
    process.on('exit', onExit);
    child.once('exit', () => process.off('exit', onExit));
    try {
      await waitConnectable(socket, child, logFile, 60_000, dataDir);
    } catch (err) {
      onExit();
      throw err;
    }
  };
  try {
    await launch();
  } catch (err) {
    if (err instanceof AccessDenied || (state.child.exitCode === null && state.child.signalCode === null)) throw err;
    log(`database server exited during start; retrying once`);
    await launch();
  }

  fs.writeFileSync(path.join(dataDir, 'port'), `${port}\n`);
  // The orbit user connects over TCP on loopback with a password (root uses the socket).
  const root = await adminConnection(socket, dataDir);
  try {
    await root.query(`CREATE USER IF NOT EXISTS '${ORBIT_USER}'@'127.0.0.1' IDENTIFIED BY '${ORBIT_PASSWORD}'`);
    await root.query(`CREATE USER IF NOT EXISTS '${ORBIT_USER}'@'localhost' IDENTIFIED BY '${ORBIT_PASSWORD}'`);
    await root.query(`GRANT ALL PRIVILEGES ON *.* TO '${ORBIT_USER}'@'127.0.0.1' WITH GRANT OPTION`);
    await root.query(`GRANT ALL PRIVILEGES ON *.* TO '${ORBIT_USER}'@'localhost' WITH GRANT OPTION`);
  } finally {
    await root.end();
  }

  const stop = async () => {
    const child = state.child;
    if (child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      child.kill('SIGTERM');
    });
  };

  return {
    port,
    socket,
    get child() {
      return state.child;
    },
    dsn: (db: string) => `mysql://${ORBIT_USER}:${ORBIT_PASSWORD}@127.0.0.1:${port}/${db}`,
    stop,
    kill: () => {
      state.child.kill('SIGKILL');
    },
    restart: async () => {
      await stop();
      await launch();
    },
  };
}

/** Creates `db` when missing (utf8mb4). */
export async function ensureDatabase(server: EmbeddedServer, db: string): Promise<void> {
  if (!/^[A-Za-z0-9_]+$/.test(db)) throw new Error(`bad database name ${db}`);
  const c = await adminConnection(server.socket);
  try {
    await c.query(`CREATE DATABASE IF NOT EXISTS \`${db}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci`);
  } finally {
    await c.end();
  }
}
