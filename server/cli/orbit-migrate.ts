#!/usr/bin/env node
// orbit-migrate up | status: forward-only numbered migrations.
import { migrateUp, schemaStatus } from '../mariadb/migrations.js';
import { runCli, runIfScript, type CliIo } from './args.js';
import { announceDsn, withPool } from './local-dsn.js';

/** Exit code 3 when `status` finds pending or unknown migrations. */
export function main(argv: string[], env: NodeJS.ProcessEnv = process.env, io: CliIo = process): Promise<number> {
  return runCli('orbit-migrate', io, async () => {
    const cmd = argv[0];
    if (cmd !== 'up' && cmd !== 'status') throw new Error('usage: orbit-migrate up | status');
    return withPool(announceDsn('orbit-migrate', env, io.stderr), async (pool) => {
      if (cmd === 'up') {
        const applied = await migrateUp(pool, (l) => io.stdout.write(l + '\n'));
        io.stdout.write(applied.length ? `applied ${applied.length} migration(s)\n` : 'schema is current\n');
        return 0;
      }
      const s = await schemaStatus(pool);
      io.stdout.write(`current=${s.current} expected=${s.expected} pending=[${s.pending.join(',')}] unknown=[${s.unknown.join(',')}]\n`);
      return s.pending.length || s.unknown.length ? 3 : 0;
    });
  });
}

runIfScript(import.meta.url, main);
