// Runs the compiled keyed-concurrency example (dist/examples/keyed-concurrency/main.js) against a
// gateway started here, with a credentials file as `orbit-admin bootstrap` writes it, and checks
// its two output lines exactly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RowDataPacket } from 'mysql2/promise';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { endOfFileChecks } from './support/fixture.js';
import { checkHistory } from './support/history.js';
import { assertPermitInvariants } from './support/invariants.js';
import { packageRoot } from '../server/paths.js';

let db: TestDb;
let gw: GatewayProcess;
let dir: string;
let credFile: string;

beforeAll(async () => {
  db = await createTestDb();
  gw = await startGateway(db.dsn);
  const t = await newTenant(db, { workerAccess: true });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-example-'));
  credFile = path.join(dir, 'credentials.json');
  fs.writeFileSync(credFile, JSON.stringify({ ...t, url: gw.url }), { mode: 0o600 });
});
afterAll(async () => {
  try {
    await endOfFileChecks(db);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

function runExample(env: Record<string, string | undefined>): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(packageRoot(), 'dist/examples/keyed-concurrency/main.js')], {
      env: { ...process.env, ORBIT_MYSQL_DSN: undefined, ORBIT_TOKEN: undefined, ORBIT_URL: undefined, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: dir,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
  });
}

describe('examples/keyed-concurrency', () => {
  it('prints the two lines exactly and exits 0 (twice: queue names are unique per run)', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await runExample({ ORBIT_URL: gw.url, ORBIT_CREDENTIALS_FILE: credFile, ORBIT_EXAMPLE_MYSQL_DSN: db.dsn });
      expect(r.stdout, r.stderr).toBe('queues=2 completed=2 tokens_increasing=true\nresource_writes=2 stale_write_rejected=true worker_drained=true\n');
      expect(r.code, r.stderr).toBe(0);
      expect(r.ms).toBeLessThan(20_000);
    }
    // What it left in Orbit is consistent: 4 queues, 4 tasks done, tokens 1..4 on distinct keys.
    const [q] = await db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM queues WHERE name LIKE 'keyed-example-%'");
    expect(Number(q[0]!.n)).toBe(4);
    const h = await checkHistory(db.pool);
    expect(h.violations).toEqual([]);
    expect(h.byState).toEqual({ SUCCEEDED: 4 });
    await assertPermitInvariants(db.pool);
    const [w] = await db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM orbit_example_writes');
    expect(Number(w[0]!.n)).toBe(4);
  }, 60_000);

  it('exits non-zero with one clear line when the credentials file is missing', async () => {
    const r = await runExample({ ORBIT_CREDENTIALS_FILE: path.join(dir, 'nope.json'), ORBIT_EXAMPLE_MYSQL_DSN: db.dsn });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^keyed-concurrency: cannot read ORBIT_CREDENTIALS_FILE .*nope\.json/);
  });

  it('exits non-zero when the gateway is unreachable', async () => {
    const r = await runExample({ ORBIT_URL: 'http://127.0.0.1:9', ORBIT_CREDENTIALS_FILE: credFile, ORBIT_EXAMPLE_MYSQL_DSN: db.dsn });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
  });
});
