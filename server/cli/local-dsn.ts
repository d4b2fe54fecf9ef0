// Which database a CLI talks to: ORBIT_MYSQL_DSN when set, otherwise the embedded database of a
// running `npm start`.
import fs from 'node:fs';
import path from 'node:path';
import { configuredDsn, orbitHome } from '../config.js';
import { createPool, parseDsn, type Pool } from '../db/pool.js';
import { isAlive, serverPid } from '../mariadb/leftover-server.js';

/** `dsn` has passed parseDsn, so it is a URL. */
export function redactDsn(dsn: string): string {
  const u = new URL(dsn);
  if (u.password) u.password = '***';
  return u.toString();
}

/** A database not named by ORBIT_MYSQL_DSN is named on stderr, so nobody changes the wrong
 * database unawares. */
export function announceDsn(prog: string, env: NodeJS.ProcessEnv = process.env, stderr: { write(s: string): unknown } = process.stderr): string {
  const configured = configuredDsn(env);
  if (configured !== undefined) return configured;
  const home = orbitHome(env);
  const file = path.join(home, 'dev.credentials.json');
  const hint = `ORBIT_MYSQL_DSN is not set and no running \`npm start\` database was found in ${home}: start one with \`npm start\` (in the folder that holds .orbit, or with ORBIT_HOME set), or set ORBIT_MYSQL_DSN=mysql://user:pass@host:port/db`;
  let dsn: unknown;
  try {
    dsn = (JSON.parse(fs.readFileSync(file, 'utf8')) as { mysql_dsn?: unknown }).mysql_dsn;
  } catch {
    throw new Error(hint);
  }
  if (typeof dsn !== 'string') throw new Error(hint);
  // The file outlives the server: a dead one would cost a connection timeout.
  const pid = serverPid(path.join(home, 'mysql'));
  if (pid === null || !isAlive(pid)) {
    throw new Error(`the embedded database of ${home} is not running: start it with \`npm start\` (or set ORBIT_MYSQL_DSN)`);
  }
  parseDsn(dsn);
  stderr.write(`${prog}: using ${redactDsn(dsn)} (the embedded database of npm start (${file}))\n`);
  return dsn;
}

/** A small pool for one CLI command, ended when `fn` settles. */
export async function withPool<T>(dsn: string, fn: (p: Pool) => Promise<T>): Promise<T> {
  const pool = createPool(dsn, { connectionLimit: 2, connectTimeout: 10_000 });
  try {
    return await fn(pool);
  } finally {
    await pool.end().catch(() => {});
  }
}
