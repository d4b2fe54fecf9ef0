#!/usr/bin/env node
// `npm start`: with ORBIT_MYSQL_DSN set, just the gateway. Without it: a private MariaDB under
// .orbit/mysql (installed from Debian when missing), migrations, a development
// application/namespace/queue/credential written once to .orbit/dev.credentials.json, then the
// gateway. Ctrl-C / SIGTERM stops both.
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../config.js';
import { startGateway } from '../gateway-main.js';
import { createPool } from '../db/pool.js';
import { migrateUp } from '../db/migrations.js';
import { ensureDatabase, startEmbeddedMariaDb } from '../db/embedded-mariadb.js';
import { bootstrap, writeCredentialsFile, type CredentialsFile } from '../admin/bootstrap.js';
import { findCredentialByTokenHash } from '../db/credentials.js';
import { hashToken } from '../http/auth.js';
import { installSignalHandlers } from './signals.js';

const say = (l: string) => process.stderr.write(l + '\n');

async function main(): Promise<void> {
  const home = path.resolve(process.env.ORBIT_HOME ?? '.orbit');
  let db: Awaited<ReturnType<typeof startEmbeddedMariaDb>> | null = null;
  const env = { ...process.env };
  if (!env.ORBIT_MYSQL_DSN) {
    db = await startEmbeddedMariaDb({ dataDir: path.join(home, 'mysql'), log: say });
    await ensureDatabase(db, 'orbit');
    env.ORBIT_MYSQL_DSN = db.dsn('orbit');
    say(`orbit: embedded database on 127.0.0.1:${db.port} (data in ${path.join(home, 'mysql')})`);
  }
  const stopDb = async () => {
    if (db) await db.stop();
  };
  try {
    const config = loadConfig(env);
    const pool = createPool(config.mysqlDsn, { connectionLimit: 2 });
    try {
      await migrateUp(pool, (l) => say(`orbit: ${l}`));
      if (db) await ensureDevCredentials(pool, path.join(home, 'dev.credentials.json'), `http://${config.httpHost}:${config.httpPort}`);
    } finally {
      await pool.end();
    }
    const gw = await startGateway(config);
    say(`orbit: gateway listening on ${gw.url}`);
    if (db) say(`orbit: development credentials in ${path.join(home, 'dev.credentials.json')}`);
    installSignalHandlers(async () => {
      await gw.close();
      await stopDb();
    });
  } catch (err) {
    say(`orbit: ${(err as Error).message}`);
    await stopDb();
    process.exit(1);
  }
}

async function ensureDevCredentials(pool: ReturnType<typeof createPool>, file: string, url: string): Promise<void> {
  if (fs.existsSync(file)) {
    try {
      const creds = JSON.parse(fs.readFileSync(file, 'utf8')) as CredentialsFile;
      const live = await findCredentialByTokenHash(pool, hashToken(creds.token));
      if (live && !live.revokedAt) {
        if (creds.url !== url) writeCredentialsFile(file, { ...creds, url });
        return;
      }
    } catch {
      /* unreadable: make a new one */
    }
  }
  const creds = await bootstrap(pool, { application: 'dev', namespace: 'dev', environment: 'dev', queues: ['initial'], workerAccess: true, url });
  writeCredentialsFile(file, creds);
}

main().catch((err) => {
  say(`orbit: ${(err as Error).message}`);
  process.exit(1);
});
