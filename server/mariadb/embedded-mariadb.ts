// A private MariaDB/MySQL server run as a child process: loopback only, own port, socket and data.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { stopLeftoverServer } from './leftover-server.js';
import { aptInstall, findServerBinary, initDataDir, IS_ROOT, socketUser } from './mariadb-install.js';

export interface EmbeddedOptions {
  dataDir: string;
  /** Extra server options, e.g. `--innodb-flush-log-at-trx-commit=2` for tests. */
  serverArgs?: string[];
  log?: (line: string) => void;
}

/** The previous run's port if free again, so a DSN written down stays valid; else any free port. */
async function lastPortOrFree(dataDir: string): Promise<number> {
  const file = path.join(dataDir, 'port');
  const last = Number(fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : NaN);
  return (Number.isInteger(last) && last > 0 && last < 65536 && (await listenOnce(last))) || freePort();
}

/** The port bound on 127.0.0.1 (0: any free one) and released again; null when it is taken. */
function listenOnce(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(null));
    srv.listen(port, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

export async function freePort(): Promise<number> {
  const port = await listenOnce(0);
  if (port === null) throw new Error('no free port on 127.0.0.1');
  return port;
}

/** As the OS user's own account, else as root (older data directories, MySQL). */
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
  // Access refused for every account: another OS user initialized the files.
  const dir = dataDir ?? path.dirname(socket);
  throw new AccessDenied(
    `the database in ${dir} was initialized by another OS user and refuses ${socketUser()}: run npm start as that user, or start afresh with \`rm -rf ${dir}\` (${(last as Error).message})`,
  );
}

class AccessDenied extends Error {}

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

async function waitConnectable(socket: string, child: ChildProcess, logFile: string, dataDir: string): Promise<void> {
  const until = Date.now() + 60_000;
  while (Date.now() < until && running(child)) {
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
  throw new Error(`database server did not become ready${running(child) ? '' : ' (it exited)'}; log tail:\n${tail}`);
}

const ORBIT_USER = 'orbit';
const ORBIT_PASSWORD = 'orbit-local';

export async function startEmbeddedMariaDb(opts: EmbeddedOptions) {
  const log = opts.log ?? ((l: string) => process.stderr.write(l + '\n'));
  if (!findServerBinary()) {
    aptInstall(['mariadb-server'], log, 'no MariaDB/MySQL server found: install one with `sudo apt-get install -y mariadb-server` (or set ORBIT_MYSQL_DSN)');
  }
  const binary = findServerBinary();
  if (!binary) throw new Error('mariadb-server installed but no mariadbd found on PATH');
  const dataDir = path.resolve(opts.dataDir);
  const files = path.join(dataDir, 'data');
  if (!fs.existsSync(path.join(files, 'mysql'))) {
    // mariadb-install-db crashes now and then; a clean retry succeeds.
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
  const port = await lastPortOrFree(dataDir);
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
    // A known packet limit, whatever the compiled-in default: the statement budget derives from it.
    '--max-allowed-packet=16M',
    ...(IS_ROOT ? ['--user=root'] : []),
    ...(opts.serverArgs ?? []),
  ];

  await stopLeftoverServer(dataDir, files, log);

  const state: { child: ChildProcess } = { child: undefined as unknown as ChildProcess };
  const launch = async () => {
    const child = spawn(binary, args, { stdio: 'ignore', detached: false });
    state.child = child;
    // However this process exits, the server stops with it; stopLeftoverServer covers kill -9.
    const onExit = () => {
      if (running(child)) child.kill('SIGTERM');
    };
    process.on('exit', onExit);
    child.once('exit', () => process.off('exit', onExit));
    try {
      await waitConnectable(socket, child, logFile, dataDir);
    } catch (err) {
      onExit();
      throw err;
    }
  };
  try {
    await launch();
  } catch (err) {
    if (err instanceof AccessDenied || running(state.child)) throw err;
    log(`database server exited during start; retrying once`);
    await launch();
  }

  fs.writeFileSync(path.join(dataDir, 'port'), `${port}\n`);
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
    if (!running(child)) return;
    const t = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.kill('SIGTERM');
    await once(child, 'exit');
    clearTimeout(t);
  };

  return {
    port,
    socket,
    get child() {
      return state.child;
    },
    dsn: (db: string) => `mysql://${ORBIT_USER}:${ORBIT_PASSWORD}@127.0.0.1:${port}/${db}`,
    stop,
    restart: async () => {
      await stop();
      await launch();
    },
  };
}

export type EmbeddedServer = Awaited<ReturnType<typeof startEmbeddedMariaDb>>;

export async function ensureDatabase(server: EmbeddedServer, db: string): Promise<void> {
  if (!/^[A-Za-z0-9_]+$/.test(db)) throw new Error(`bad database name ${db}`);
  const c = await adminConnection(server.socket);
  try {
    await c.query(`CREATE DATABASE IF NOT EXISTS \`${db}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci`);
  } finally {
    await c.end();
  }
}
