// Starts one private MariaDB for the whole run (the same launcher as `npm start`); each test file
// creates its own database on it. Durability is relaxed (flush at commit = 2): the tests kill
// processes, not the machine, and a killed mysqld still keeps what reached the OS.
//
// The contract and chaos projects (vitest.config.ts) both name this file, and vitest loads it once
// per project; global setups run in the one main vitest process, so the server is kept on
// globalThis and shared: the first project to set up starts it, the last to tear down stops it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedMariaDb, type EmbeddedServer } from '../../server/mariadb/embedded-mariadb.js';
import { ensureChromium } from './ensure-chromium.js';
import { ensureGoPrereqs } from './ensure-go-prereqs.js';

const CHROMIUM = process.env.ORBIT_CHROMIUM ?? '/usr/bin/chromium';

interface Shared {
  started: Promise<EmbeddedServer>;
  dir: string;
  users: number;
  stopping: boolean;
}

const KEY = Symbol.for('orbit.test.shared-mariadb');
const holder = globalThis as { [KEY]?: Shared };

/** If the shared server dies mid-run, say why (its log tail) and start it again on the same port
 * and data, so one crash does not take every later test file down with it. */
function watch(shared: Shared, s: EmbeddedServer, logFile: string): void {
  s.child.once('exit', (code, signal) => {
    if (shared.stopping) return;
    const tail = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').split('\n').slice(-25).join('\n') : '(no log)';
    process.stderr.write(`\nshared test database exited unexpectedly (code ${code}, signal ${signal}); log tail:\n${tail}\nrestarting it\n`);
    s.restart().then(
      () => watch(shared, s, logFile),
      (err) => process.stderr.write(`could not restart the shared test database: ${(err as Error).message}\n`),
    );
  });
}

function start(): Shared {
  ensureChromium(CHROMIUM, (l) => process.stderr.write(l + '\n'));
  ensureGoPrereqs((l) => process.stderr.write(l + '\n'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-test-'));
  // `started` is set just below: watch() needs the object the promise belongs to.
  const shared = { dir, users: 0, stopping: false } as Shared;
  shared.started = startEmbeddedMariaDb({
    dataDir: dir,
    serverArgs: ['--innodb-flush-log-at-trx-commit=2', '--innodb-doublewrite=0', '--innodb-log-file-size=64M'],
    log: (l) => process.stderr.write(l + '\n'),
  }).then((server) => {
    watch(shared, server, path.join(dir, 'server.log'));
    return server;
  });
  return shared;
}

export async function setup(project: TestProject): Promise<void> {
  const shared = (holder[KEY] ??= start());
  shared.users++;
  const server = await shared.started;
  project.provide('mysqlPort', server.port);
}

export async function teardown(): Promise<void> {
  const shared = holder[KEY];
  if (!shared || --shared.users > 0) return;
  delete holder[KEY];
  shared.stopping = true;
  try {
    await (await shared.started.catch(() => undefined))?.stop();
  } finally {
    fs.rmSync(shared.dir, { recursive: true, force: true });
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    mysqlPort: number;
  }
}
