#!/usr/bin/env node
// orbit-migrate up | status — forward-only numbered migrations (ORBIT_MYSQL_DSN, else the
// embedded database of a running `npm start`).
import { createPool } from '../db/pool.js';
import { migrateUp, schemaStatus } from '../db/migrations.js';
import { runMain } from './args.js';
import { announceDsn } from './local-dsn.js';

runMain('orbit-migrate', async () => {
  const cmd = process.argv[2];
  if (cmd !== 'up' && cmd !== 'status') throw new Error('usage: orbit-migrate up | status');
  const dsn = announceDsn('orbit-migrate');
  const pool = createPool(dsn, { connectionLimit: 2 });
  try {
    if (cmd === 'up') {
      const applied = await migrateUp(pool, (l) => process.stdout.write(l + '\n'));
      process.stdout.write(applied.length ? `applied ${applied.length} migration(s)\n` : 'schema is current\n');
    } else {
      const s = await schemaStatus(pool);
      process.stdout.write(`current=${s.current} expected=${s.expected} pending=[${s.pending.join(',')}] unknown=[${s.unknown.join(',')}]\n`);
      if (s.pending.length || s.unknown.length) process.exitCode = 3;
    }
  } finally {
    await pool.end();
  }
});
