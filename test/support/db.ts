// A fresh database per test file, migrated, on the run's shared MariaDB.
import { inject } from 'vitest';
import mysql from 'mysql2/promise';
import { nanoid } from 'nanoid';
import { createPool, type Pool } from '../../server/db/pool.js';
import { migrateUp } from '../../server/db/migrations.js';
import { bootstrap, type CredentialsFile } from '../../server/admin/bootstrap.js';

export interface TestDb {
  name: string;
  dsn: string;
  pool: Pool;
  drop(): Promise<void>;
}

export function serverDsn(db: string, port = inject('mysqlPort')): string {
  return `mysql://orbit:orbit-local@127.0.0.1:${port}/${db}`;
}

export async function createTestDb(port = inject('mysqlPort')): Promise<TestDb> {
  const name = `t_${nanoid(10).replace(/[^A-Za-z0-9]/g, 'x')}`;
  const admin = await mysql.createConnection({ host: '127.0.0.1', port, user: 'orbit', password: 'orbit-local' });
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4`);
  await admin.end();
  const dsn = serverDsn(name, port);
  const pool = createPool(dsn, { connectionLimit: 8 });
  await migrateUp(pool);
  return {
    name,
    dsn,
    pool,
    async drop() {
      await pool.end().catch(() => {});
      const c = await mysql.createConnection({ host: '127.0.0.1', port, user: 'orbit', password: 'orbit-local' });
      await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await c.end();
    },
  };
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
