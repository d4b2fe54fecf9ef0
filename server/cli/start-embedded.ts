#!/usr/bin/env node
// `npm start`: with ORBIT_MYSQL_DSN set, just the gateway. Without it: a private MariaDB under
// .orbit/mysql (installed from Debian when missing), migrations, a development
// application/namespace/queue/credential written once to .orbit/dev.credentials.json, then the
// gateway. Ctrl-C / SIGTERM stops both, also while still starting.
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, type Config } from '../config.js';
import { startGateway, type GatewayHandle } from '../gateway-main.js';
import { createPool } from '../db/pool.js';
import { migrateUp } from '../db/migrations.js';
import { ensureDatabase, startEmbeddedMariaDb, type EmbeddedServer } from '../db/embedded-mariadb.js';
import { bootstrap, writeCredentialsFile, type CredentialsFile } from '../admin/bootstrap.js';
import { findCredentialByTokenHash } from '../db/credentials.js';
import { hashToken } from '../http/auth.js';
import { installSignalHandlers } from './signals.js';
import { oneLine } from './args.js';

const say = (l: string) => process.stderr.write(l + '\n');

class Stopped extends Error {}

async function main(): Promise<void> {
  const home = path.resolve(process.env.ORBIT_HOME ?? '.orbit');
  const credFile = path.join(home, 'dev.credentials.json');
  let db: EmbeddedServer | null = null;
  let gw: GatewayHandle | null = null;
  let stopping = false;
  const checkpoint = () => {
    if (stopping) throw new Stopped('stopped while starting');
  };
  let startup: Promise<void> = Promise.resolve();
  // Installed first: a signal during start-up waits for the current step, then undoes it all.
  installSignalHandlers(async () => {
    stopping = true;
    await startup.catch(() => {});
    if (gw) await gw.close();
    if (db) await db.stop();
  });

  startup = (async () => {
    const env = { ...process.env };
    let config: Config;
    if (env.ORBIT_MYSQL_DSN) {
      config = loadConfig(env);
    } else {
      // Check the rest of the configuration before starting (or installing) anything.
      loadConfig({ ...env, ORBIT_MYSQL_DSN: 'mysql://check@127.0.0.1:3306/orbit' });
      db = await startEmbeddedMariaDb({ dataDir: path.join(home, 'mysql'), log: say });
      checkpoint();
      await ensureDatabase(db, 'orbit');
      env.ORBIT_MYSQL_DSN = db.dsn('orbit');
      config = loadConfig(env);
      say(`orbit: embedded database on 127.0.0.1:${db.port} (data in ${path.join(home, 'mysql')})`);
    }
    const pool = createPool(config.mysqlDsn, { connectionLimit: 2 });
    try {
      await migrateUp(pool, (l) => say(`orbit: ${l}`));
      checkpoint();
      if (db) await ensureDevCredentials(pool, credFile, `http://${config.httpHost}:${config.httpPort}`);
    } finally {
      await pool.end().catch(() => {});
    }
    checkpoint();
    gw = await startGateway(config);
    // With ORBIT_HTTP_ADDR=...:0 the real port is known only now.
    if (db) syncCredentialsUrl(credFile, gw.url);
    checkpoint();
    say(`orbit: gateway listening on ${gw.url}`);
    if (db) say(`orbit: development credentials in ${credFile}`);
  })();

  try {
    await startup;
  } catch (err) {
    if (err instanceof Stopped) return; // the signal handler finishes the shutdown
    say(`orbit: ${oneLine(err)}`);
    try {
      if (gw) await (gw as GatewayHandle).close();
    } catch {
      /* exiting anyway */
    }
    if (db) await (db as EmbeddedServer).stop().catch(() => {});
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
      say(`orbit: ${file} holds a revoked or unknown credential; issuing a new one`);
    } catch {
      say(`orbit: ${file} is unreadable; issuing a new credential`);
    }
  }
  const creds = await bootstrap(pool, { application: 'dev', namespace: 'dev', environment: 'dev', queues: ['initial'], workerAccess: true, url });
  writeCredentialsFile(file, creds);
}

function syncCredentialsUrl(file: string, url: string): void {
  const creds = JSON.parse(fs.readFileSync(file, 'utf8')) as CredentialsFile;
  if (creds.url !== url) writeCredentialsFile(file, { ...creds, url });
}

main().catch((err) => {
  say(`orbit: ${oneLine(err)}`);
  process.exit(1);
});
