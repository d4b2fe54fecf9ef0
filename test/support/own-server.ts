// A file's own durable MariaDB, for the chaos files that kill or restart the database server (the
// shared server of test/support/global-setup.ts must stay up for the other files): an embedded
// server in a fresh temporary directory, the schema migrated, one tenant (queue 'q', 5 s leases so
// that expiries come quickly). The afterAll kills the SDK workers and gateways the file started,
// stops the server and removes its directory, then fails if a worker or gateway process is left.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { ensureDatabase, startEmbeddedMariaDb, type EmbeddedServer } from '../../server/mariadb/embedded-mariadb.js';
import { createPool, type Pool } from '../../server/db/pool.js';
import { migrateUp } from '../../server/mariadb/migrations.js';
import { bootstrap, type CredentialsFile } from '../../server/admin/bootstrap.js';
import { assertNoGatewaysRunning, stopAllGateways } from './gateway.js';
import { assertNoWorkersRunning, killAllWorkers } from './workers.js';

export interface OwnServer {
  /** The embedded server (kill() and restart() keep its data directory and port). */
  readonly server: EmbeddedServer;
  /** A pool of 4 on the 'orbit' database. */
  readonly pool: Pool;
  /** The tenant: application a, namespace n, queue 'q', worker access. */
  readonly t: CredentialsFile;
  /** The DSN of the 'orbit' database, for gateways. */
  dsn(): string;
}

/** Registers the beforeAll/afterAll hooks; the getters are valid from beforeAll on. `prefix` names
 * the temporary directory (orbit-<what>-). */
export function useOwnServer(prefix: string): OwnServer {
  let dir: string | undefined;
  let server: EmbeddedServer | undefined;
  let pool: Pool | undefined;
  let t: CredentialsFile | undefined;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    server = await startEmbeddedMariaDb({ dataDir: dir, log: () => {} });
    await ensureDatabase(server, 'orbit');
    pool = createPool(server.dsn('orbit'), { connectionLimit: 4 });
    await migrateUp(pool);
    t = await bootstrap(pool, { application: 'a', namespace: 'n', environment: 'test', queues: ['q'], workerAccess: true, url: '' });
    await pool.query('UPDATE queues SET lease_seconds = 5');
  });

  afterAll(async () => {
    await killAllWorkers();
    await stopAllGateways();
    await pool?.end().catch(() => {});
    await server?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    await assertNoWorkersRunning();
    await assertNoGatewaysRunning();
  });

  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`useOwnServer: ${what} is not set up (read it in a hook or test, after beforeAll)`);
    return v;
  };
  return {
    get server() {
      return need(server, 'server');
    },
    get pool() {
      return need(pool, 'pool');
    },
    get t() {
      return need(t, 't');
    },
    dsn: () => need(server, 'server').dsn('orbit'),
  };
}
