// A fresh database per test file, migrated, on the run's shared MariaDB.
import { inject } from 'vitest';
import mysql from 'mysql2/promise';
import { nanoid } from 'nanoid';
import { createPool, type Pool } from '../../server/db/pool.js';
import fs from 'node:fs';
import { listMigrations, migrateUp, splitStatements } from '../../server/mariadb/migrations.js';
import { bootstrap, type CredentialsFile } from '../../server/admin/bootstrap.js';
import { waitingHeadViolations } from './waiting.js';

export interface TestDb {
  name: string;
  dsn: string;
  pool: Pool;
  drop(): Promise<void>;
}

export function serverDsn(db: string, port = inject('mysqlPort')): string {
  return `mysql://orbit:orbit-local@127.0.0.1:${port}/${db}`;
}

/** A fresh database on `port`, brought to its schema by `migrate` (all migrations by default; a
 * migration test passes one that stops before the migration under test). */
export async function createTestDb(port = inject('mysqlPort'), migrate: (pool: Pool) => Promise<unknown> = migrateUp): Promise<TestDb> {
  const name = `t_${nanoid(10).replace(/[^A-Za-z0-9]/g, 'x')}`;
  const admin = await mysql.createConnection({ host: '127.0.0.1', port, user: 'orbit', password: 'orbit-local' });
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4`);
  await admin.end();
  const dsn = serverDsn(name, port);
  const pool = createPool(dsn, { connectionLimit: 8 });
  await migrate(pool);
  return {
    name,
    dsn,
    pool,
    async drop() {
      // A connection still checked out of the file's pool at the end is a leak (a getConnection()
      // without release(), or a query nobody awaited). Measured before end(), which closes them all;
      // the database is dropped either way so the run continues cleanly, then the file fails.
      const held = checkedOut(pool);
      // The waiting-heads invariant over whatever the file did (db/waiting-tasks.ts): checked here
      // so that every test file checks it. A database without the column (a migration test that
      // stopped before 000009) or without the table is skipped (errno 1054, 1146).
      const heads =
        held > 0
          ? []
          : await waitingHeadViolations(pool).catch((err: { errno?: number }) => {
              if (err.errno === 1054 || err.errno === 1146) return [];
              throw err;
            });
      await pool.end().catch(() => {});
      const c = await mysql.createConnection({ host: '127.0.0.1', port, user: 'orbit', password: 'orbit-local' });
      await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await c.end();
      if (heads.length > 0) {
        throw new Error(`TestDb.drop(): the waiting-heads invariant is broken in ${name} (db/waiting-tasks.ts): ${JSON.stringify(heads)}`);
      }
      if (held > 0) {
        throw new Error(
          `TestDb.drop(): ${held} connection(s) of the pool of ${name} are still checked out at the end of the file ` +
            '(a pool.getConnection() without release(), or a query that was never awaited); release them in the test',
        );
      }
    },
  };
}

/** Connections of a mysql2 pool that are checked out (all minus free); 0 for a closed pool.
 * mysql2 internals (lib/base/pool.js): the promise pool wraps the core pool as `.pool`. */
export function checkedOut(pool: Pool): number {
  const core = (pool as unknown as { pool?: { _closed?: boolean; _allConnections?: { length: number }; _freeConnections?: { length: number } } }).pool;
  if (!core || core._closed || !core._allConnections || !core._freeConnections) return 0;
  return core._allConnections.length - core._freeConnections.length;
}

let counter = 0;
/** A new application + namespace + queues + credential (all scopes with worker access). */
export async function newTenant(db: TestDb, opts: { queues?: string[]; workerAccess?: boolean; application?: string } = {}): Promise<CredentialsFile> {
  counter++;
  return bootstrap(db.pool, {
    application: opts.application ?? `app-${counter}-${nanoid(6).replace(/[^A-Za-z0-9]/g, 'x')}`,
    namespace: `ns-${counter}`,
    environment: 'test',
    queues: opts.queues ?? ['initial'],
    workerAccess: opts.workerAccess ?? true,
    url: 'http://unused',
  });
}

/** A database migrated up to (not including) migration `version`, recorded as the runner records
 * it: for the tests of a migration on a database that already holds rows. */
export function createTestDbBefore(version: number, port = inject('mysqlPort')): Promise<TestDb> {
  return createTestDb(port, async (pool) => {
    await pool.query(
      `CREATE TABLE schema_migrations (version INT UNSIGNED NOT NULL, name VARCHAR(128) NOT NULL, checksum CHAR(64) NOT NULL,
         applied_at DATETIME(3) NOT NULL, PRIMARY KEY (version))`,
    );
    for (const m of listMigrations().filter((x) => x.version < version)) {
      for (const stmt of splitStatements(fs.readFileSync(m.file, 'utf8'))) await pool.query(stmt);
      await pool.query('INSERT INTO schema_migrations VALUES (?, ?, ?, UTC_TIMESTAMP(3))', [m.version, m.name, m.checksum]);
    }
  });
}
