// The per-file setup of the example tests: a fresh database, a real gateway, a tenant with worker
// access and a credentials file as `orbit-admin bootstrap --worker-access` writes it; and a runner
// of a compiled example (dist/examples/<name>/main.js) that captures its output and exit code.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { CredentialsFile } from '../../server/admin/bootstrap.js';
import { packageRoot } from '../../server/paths.js';
import { createTestDb, newTenant, type TestDb } from './db.js';
import { endOfFileChecks } from './fixture.js';
import { startGateway, type GatewayProcess } from './gateway.js';

export interface ExampleFixture {
  db: TestDb;
  gw: GatewayProcess;
  tenant: CredentialsFile;
  dir: string;
  credFile: string;
}

export interface ExampleRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Registers beforeAll/afterAll; the returned object is filled in beforeAll. */
export function useExampleFixture(): ExampleFixture {
  const fx = {} as ExampleFixture;
  beforeAll(async () => {
    fx.db = await createTestDb();
    fx.gw = await startGateway(fx.db.dsn);
    fx.tenant = await newTenant(fx.db, { workerAccess: true });
    fx.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-example-'));
    fx.credFile = path.join(fx.dir, 'credentials.json');
    fs.writeFileSync(fx.credFile, JSON.stringify({ ...fx.tenant, url: fx.gw.url }), { mode: 0o600 });
  });
  afterAll(async () => {
    try {
      await endOfFileChecks(fx.db);
    } finally {
      if (fx.dir) fs.rmSync(fx.dir, { recursive: true, force: true });
    }
  });
  return fx;
}

/** Runs dist/examples/<name>/main.js in `cwd` with the test's environment minus the Orbit
 * variables a developer may have set, plus `env`. */
export function runExample(name: string, cwd: string, env: Record<string, string | undefined>): Promise<ExampleRun> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(packageRoot(), `dist/examples/${name}/main.js`)], {
      env: { ...process.env, ORBIT_MYSQL_DSN: undefined, ORBIT_TOKEN: undefined, ORBIT_URL: undefined, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
  });
}
