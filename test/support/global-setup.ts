// Starts one private MariaDB for the whole run (the same launcher as `npm start`); each test file
// creates its own database on it. Durability is relaxed (flush at commit = 2): the tests kill
// processes, not the machine, and a killed mysqld still keeps what reached the OS.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedMariaDb, type EmbeddedServer } from '../../server/db/embedded-mariadb.js';

let server: EmbeddedServer | undefined;
let dir: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-test-'));
  server = await startEmbeddedMariaDb({
    dataDir: dir,
    serverArgs: ['--innodb-flush-log-at-trx-commit=2', '--innodb-doublewrite=0', '--innodb-log-file-size=64M'],
    log: (l) => process.stderr.write(l + '\n'),
  });
  project.provide('mysqlPort', server.port);
}

export async function teardown(): Promise<void> {
  await server?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}

declare module 'vitest' {
  export interface ProvidedContext {
    mysqlPort: number;
  }
}
