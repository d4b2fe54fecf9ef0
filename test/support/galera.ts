// A real three-node MariaDB Galera cluster on this machine for the chaos test: Debian's
// galera-4 provider (installed here when missing, as the test setup installs mariadb-server), one
// mariadbd per node on loopback ports, rsync state transfer for the joiners. Run as root, the
// servers switch to the `mysql` user (--user=mysql): the rsync SST fails as root with "Permission
// denied". Nodes join one after the other (two joiners at once from one donor failed here).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { freePort } from '../../server/mariadb/embedded-mariadb.js';
import { aptInstall, findServerBinary, which } from '../../server/mariadb/mariadb-install.js';

const PROVIDERS = [
  '/usr/lib/galera/libgalera_smm.so',
  '/usr/lib/galera-4/libgalera_smm.so',
  '/usr/lib64/galera-4/libgalera_smm.so',
  '/usr/lib64/galera/libgalera_smm.so',
];

export const ORBIT_USER = 'orbit';
export const ORBIT_PASSWORD = 'orbit-galera';

export interface GaleraNode {
  name: string;
  port: number;
  socket: string;
  logFile: string;
  child: ChildProcess;
  /** kill -9 of this node's mariadbd; resolves when it is gone. */
  kill9(): Promise<void>;
}

export interface GaleraCluster {
  nodes: GaleraNode[];
  /** DSN of the orbit user on database `db` through `port` (a node's or a proxy's). */
  dsn(port: number, db: string): string;
  /** Stops every node still running and removes the data. */
  stop(): Promise<void>;
}

function provider(): string | null {
  return PROVIDERS.find((p) => fs.existsSync(p)) ?? null;
}

/** The Galera provider library and rsync, installed with apt-get when missing; throws the reason
 * when they cannot be (the test then fails with it: nothing is skipped). */
export function ensureGalera(log: (l: string) => void): string {
  if (!findServerBinary()) aptInstall(['mariadb-server'], log, 'no MariaDB server on this machine and no root/apt-get to install one');
  if (!provider() || !which(['rsync'])) {
    aptInstall(['galera-4', 'rsync'], log, 'Galera is not installed (no libgalera_smm.so or rsync) and this user cannot apt-get install galera-4 rsync');
  }
  const p = provider();
  if (!p) throw new Error(`galera-4 installed but no libgalera_smm.so in ${PROVIDERS.join(', ')}`);
  return p;
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** The OS user the servers run as: `mysql` under root (SST needs it), else this user. */
function serverUser(): { name: string; uid: number; gid: number } {
  if (!isRoot()) return { name: os.userInfo().username, uid: process.getuid!(), gid: process.getgid!() };
  const r = spawnSync('id', ['-u', 'mysql'], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', 'mysql'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error('no `mysql` OS user to run the Galera nodes as (mariadb-server creates it)');
  return { name: 'mysql', uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

async function admin(socket: string): Promise<mysql.Connection> {
  return mysql.createConnection({ socketPath: socket, user: os.userInfo().username });
}

async function status(socket: string, names: string[]): Promise<Record<string, string>> {
  const c = await admin(socket);
  try {
    const [rows] = await c.query(`SHOW GLOBAL STATUS WHERE Variable_name IN (${names.map(() => '?').join(', ')})`, names);
    return Object.fromEntries((rows as { Variable_name: string; Value: string }[]).map((r) => [r.Variable_name, r.Value]));
  } finally {
    await c.end();
  }
}

/** Starts a cluster of `n` nodes (node1 bootstraps it); about 20–40 s on two loaded cores. */
export async function startGaleraCluster(n: number, log: (l: string) => void): Promise<GaleraCluster> {
  const lib = ensureGalera(log);
  const binary = findServerBinary()!;
  const installDb = which(['mariadb-install-db', 'mysql_install_db']);
  if (!installDb) throw new Error('no mariadb-install-db to initialize the first Galera node');
  const user = serverUser();
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-galera-'));
  fs.chmodSync(base, 0o755);
  const ports: { sql: number; gcomm: number; ist: number; sst: number }[] = [];
  for (let i = 0; i < n; i++) ports.push({ sql: await freePort(), gcomm: await freePort(), ist: await freePort(), sst: await freePort() });
  const address = `gcomm://${ports.map((p) => `127.0.0.1:${p.gcomm}`).join(',')}`;
  const nodes: GaleraNode[] = [];
  const children: ChildProcess[] = [];
  const killAll = () => children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill('SIGKILL'));
  process.on('exit', killAll);

  const startNode = async (i: number) => {
    const name = `node${i + 1}`;
    const dir = path.join(base, name);
    const data = path.join(dir, 'data');
    fs.mkdirSync(data, { recursive: true });
    if (i === 0) {
      const r = spawnSync(
        installDb,
        [
          '--no-defaults',
          `--datadir=${data}`,
          '--auth-root-authentication-method=socket',
          `--auth-root-socket-user=${os.userInfo().username}`,
          '--skip-test-db',
          '--skip-name-resolve',
          '--force',
          ...(isRoot() ? [`--user=${user.name}`] : []),
        ],
        { encoding: 'utf8' },
      );
      if (r.status !== 0) throw new Error(`mariadb-install-db failed for ${name}: ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' | ')}`);
    }
    for (const p of [dir, data]) fs.chownSync(p, user.uid, user.gid);
    const p = ports[i]!;
    const socket = path.join(dir, 's.sock');
    const logFile = path.join(dir, 'server.log');
    const args = [
      '--no-defaults',
      `--datadir=${data}`,
      `--socket=${socket}`,
      `--port=${p.sql}`,
      '--bind-address=127.0.0.1',
      `--pid-file=${path.join(dir, 'mysqld.pid')}`,
      `--log-error=${logFile}`,
      '--skip-name-resolve',
      '--character-set-server=utf8mb4',
      '--collation-server=utf8mb4_general_ci',
      '--max-connections=600',
      '--max-allowed-packet=16M',
      '--innodb-buffer-pool-size=128M',
      '--innodb-log-file-size=16M',
      '--innodb-flush-log-at-trx-commit=2',
      '--innodb-doublewrite=0',
      // What Galera requires of every node.
      '--binlog-format=ROW',
      '--innodb-autoinc-lock-mode=2',
      '--wsrep-on=ON',
      `--wsrep-provider=${lib}`,
      '--wsrep-cluster-name=orbit-chaos',
      `--wsrep-cluster-address=${address}`,
      `--wsrep-node-name=${name}`,
      `--wsrep-node-address=127.0.0.1:${p.gcomm}`,
      `--wsrep-sst-receive-address=127.0.0.1:${p.sst}`,
      `--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:${p.gcomm};ist.recv_addr=127.0.0.1:${p.ist};gcache.size=64M`,
      '--wsrep-sst-method=rsync',
      ...(isRoot() ? [`--user=${user.name}`] : []),
      ...(i === 0 ? ['--wsrep-new-cluster'] : []),
    ];
    const child = spawn(binary, args, { stdio: 'ignore' });
    children.push(child);
    const until = Date.now() + 120_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null || Date.now() > until) {
        const tail = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n') : '(no log)';
        throw new Error(`Galera ${name} did not become Synced${child.exitCode !== null ? ` (exited ${child.exitCode})` : ''}; log tail:\n${tail}`);
      }
      try {
        const s = await status(socket, ['wsrep_ready', 'wsrep_local_state_comment', 'wsrep_cluster_size']);
        if (s.wsrep_ready === 'ON' && s.wsrep_local_state_comment === 'Synced' && Number(s.wsrep_cluster_size) === i + 1) break;
      } catch {
        /* not up yet */
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    nodes.push({
      name,
      port: p.sql,
      socket,
      logFile,
      child,
      async kill9() {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await exited;
      },
    });
    log(`Galera ${name} synced (port ${p.sql})`);
  };

  try {
    await startNode(0);
    // The orbit user, created once: DDL and account changes replicate to the joiners (and SST
    // copies them anyway).
    const c = await admin(nodes[0]!.socket);
    try {
      for (const host of ['127.0.0.1', 'localhost']) {
        await c.query(`CREATE USER IF NOT EXISTS '${ORBIT_USER}'@'${host}' IDENTIFIED BY '${ORBIT_PASSWORD}'`);
        await c.query(`GRANT ALL PRIVILEGES ON *.* TO '${ORBIT_USER}'@'${host}'`);
      }
    } finally {
      await c.end();
    }
    for (let i = 1; i < n; i++) await startNode(i);
  } catch (err) {
    killAll();
    fs.rmSync(base, { recursive: true, force: true });
    throw err;
  }

  return {
    nodes,
    dsn: (port, db) => `mysql://${ORBIT_USER}:${ORBIT_PASSWORD}@127.0.0.1:${port}/${db}`,
    async stop() {
      await Promise.all(
        children.map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.exitCode !== null || c.signalCode !== null) return resolve();
              const t = setTimeout(() => c.kill('SIGKILL'), 20_000);
              c.once('exit', () => (clearTimeout(t), resolve()));
              c.kill('SIGTERM');
            }),
        ),
      );
      process.off('exit', killAll);
      fs.rmSync(base, { recursive: true, force: true });
    },
  };
}
