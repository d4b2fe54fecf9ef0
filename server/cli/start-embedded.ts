#!/usr/bin/env node
// `npm start`: without ORBIT_MYSQL_DSN, a private MariaDB, migrations and development credentials
// (with the DSN, for the CLIs) before the gateway. A signal stops both, also while still starting.
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import lockfile from 'proper-lockfile';
import { configuredDsn, loadConfig, orbitHome, type Config } from '../config.js';
import { startNode, type NodeHandle } from './processes.js';
import { lifecycleLogger } from '../logger.js';
import type { Pool } from '../db/pool.js';
import { redactDsn, withPool } from './local-dsn.js';
import { migrateUp } from '../mariadb/migrations.js';
import { ensureDatabase, startEmbeddedMariaDb, type EmbeddedServer } from '../mariadb/embedded-mariadb.js';
import { bootstrap, writeCredentialsFile, type CredentialsFile } from '../admin/bootstrap.js';
import { findCredentialByTokenHash } from '../db/credentials.js';
import { hashToken } from '../admin/access.js';
import { installSignalHandlers } from './signals.js';
import { oneLine } from './args.js';

class Stopped extends Error {}

async function main(): Promise<void> {
  const home = orbitHome();
  const credFile = path.join(home, 'dev.credentials.json');
  const log: Logger = lifecycleLogger({ component: 'start' });
  let db: EmbeddedServer | null = null;
  let gw: NodeHandle | null = null;
  let unlock: (() => Promise<void>) | null = null;
  let stopping = false;
  const checkpoint = () => {
    if (stopping) throw new Stopped('stopped while starting');
  };
  const shutdown = async () => {
    if (gw) await gw.close();
    if (db) await db.stop();
    if (unlock) await unlock().catch(() => {});
  };
  const startup = (async () => {
    let config: Config;
    if (configuredDsn() !== undefined) {
      config = loadConfig();
    } else {
      // The rest of the configuration is checked before anything is installed or started.
      loadConfig(process.env, { mysqlDsn: 'mysql://check@127.0.0.1:3306/orbit' });
      unlock = await lockHome(home);
      db = await startEmbeddedMariaDb({ dataDir: path.join(home, 'mysql'), log: (l) => log.info(l) });
      checkpoint();
      await ensureDatabase(db, 'orbit');
      config = loadConfig(process.env, { mysqlDsn: db.dsn('orbit') });
      log.info({ dsn: config.mysqlDsn, data_dir: path.join(home, 'mysql') }, `embedded database: ${config.mysqlDsn}`);
    }
    await withPool(config.mysqlDsn, async (pool) => {
      await migrateUp(pool, (l) => log.info(l));
      checkpoint();
      if (db) await ensureDevCredentials(log, pool, credFile, `http://${config.httpHost}:${config.httpPort}`, config.mysqlDsn);
    });
    checkpoint();
    gw = await startNode(config, log);
    // With port 0 the real port is known only now.
    if (db) syncCredentials(credFile, { url: gw.url, mysql_dsn: config.mysqlDsn });
    checkpoint();
    const procs = config.processes === 1 ? {} : { processes: gw.processes };
    log.info({ url: gw.url, dsn: db ? config.mysqlDsn : redactDsn(config.mysqlDsn), ...procs }, `gateway listening on ${gw.url}`);
    if (db) log.info({ credentials_file: credFile }, `development credentials in ${credFile} (token, queue_id, mysql_dsn)`);
  })();
  // A signal during start-up waits for the current step, then undoes it all.
  installSignalHandlers(async () => {
    stopping = true;
    log.info({ signal: true }, 'stopping');
    await startup.catch(() => {});
    await shutdown();
    log.info('stopped');
  });

  try {
    await startup;
  } catch (err) {
    if (err instanceof Stopped) return; // the signal handler finishes the shutdown
    log.fatal(oneLine(err));
    await shutdown().catch(() => {}); // exiting anyway
    process.exit(1);
  }
}

async function ensureDevCredentials(log: Logger, pool: Pool, file: string, url: string, dsn: string): Promise<void> {
  if (fs.existsSync(file)) {
    try {
      const creds = JSON.parse(fs.readFileSync(file, 'utf8')) as CredentialsFile;
      const live = await findCredentialByTokenHash(pool, hashToken(creds.token));
      if (live && !live.revokedAt) {
        syncCredentials(file, { url, mysql_dsn: dsn });
        return;
      }
      log.warn({ credentials_file: file }, `${file} holds a revoked or unknown credential; issuing a new one`);
    } catch {
      log.warn({ credentials_file: file }, `${file} is unreadable; issuing a new credential`);
    }
  }
  const creds = await bootstrap(pool, { application: 'dev', namespace: 'dev', environment: 'dev', queues: ['initial'], workerAccess: true, url });
  writeCredentialsFile(file, { ...creds, mysql_dsn: dsn });
}

/** The token and ids never change here. */
function syncCredentials(file: string, now: { url: string; mysql_dsn: string }): void {
  const creds = JSON.parse(fs.readFileSync(file, 'utf8')) as CredentialsFile;
  if (creds.url !== now.url || creds.mysql_dsn !== now.mysql_dsn) writeCredentialsFile(file, { ...creds, ...now });
}

const STALE_MS = 5_000;

/** One `npm start` per ORBIT_HOME, so that two servers never run on one data directory. The lock is
 * refreshed while held, so one left by a killed process goes stale and is taken over; the second
 * start waits briefly, since the first may be a process that just died. */
async function lockHome(home: string): Promise<() => Promise<void>> {
  fs.mkdirSync(home, { recursive: true });
  const target = path.join(home, 'start');
  try {
    return await lockfile.lock(target, {
      stale: STALE_MS,
      retries: { retries: 8, minTimeout: 250, maxTimeout: 1000, factor: 1.5 },
      realpath: false,
      // Losing the lock (the folder removed, the clock jumped) must not crash a running gateway.
      onCompromised: () => {},
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOCKED') {
      throw new Error(`another npm start is running on ${home} (lock ${target}.lock); stop it first, or set ORBIT_HOME to another folder`);
    }
    throw err;
  }
}

main().catch((err) => {
  lifecycleLogger({ component: 'start' }).fatal(oneLine(err));
  process.exit(1);
});
