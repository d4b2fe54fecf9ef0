// Starts one private MariaDB for the whole run (the same launcher as `npm start`); each test file
// creates its own database on it. Durability is relaxed (flush at commit = 2): the tests kill
// processes, not the machine, and a killed mysqld still keeps what reached the OS.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedMariaDb, type EmbeddedServer } from '../../server/db/embedded-mariadb.js';
import { ensureChromium } from './ensure-chromium.js';

const CHROMIUM = process.env.ORBIT_CHROMIUM ?? '/usr/bin/chromium';

let server: EmbeddedServer | undefined;
let dir: string | undefined;
let stopping = false;

/** If the shared server dies mid-run, say why (its log tail) and start it again on the same port
 * and data, so one crash does not take every later test file down with it. */
function watch(s: EmbeddedServer, logFile: string): void {
  s.child.once('exit', (code, signal) => {
    if (stopping) return;
    const tail = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').split('\n').slice(-25).join('\n') : '(no log)';
    process.stderr.write(`\nshared test database exited unexpectedly (code ${code}, signal ${signal}); log tail:\n${tail}\nrestarting it\n`);
    s.restart().then(
      () => watch(s, logFile),
      (err) => process.stderr.write(`could not restart the shared test database: ${(err as Error).message}\n`),
    );
  });
}

export async function setup(project: TestProject): Promise<void> {
  ensureChromium(CHROMIUM, (l) => process.stderr.write(l + '\n'));
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-test-'));
  server = await startEmbeddedMariaDb({
    dataDir: dir,
    serverArgs: ['--innodb-flush-log-at-trx-commit=2', '--innodb-doublewrite=0', '--innodb-log-file-size=64M'],
    log: (l) => process.stderr.write(l + '\n'),
  });
  project.provide('mysqlPort', server.port);
  watch(server, path.join(dir, 'server.log'));
}

export async function teardown(): Promise<void> {
  stopping = true;
  await server?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}

declare module 'vitest' {
  export interface ProvidedContext {
    mysqlPort: number;
  }
}
