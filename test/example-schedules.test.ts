// Runs the compiled schedules example (dist/examples/schedules/main.js) against a gateway started
// here, with a credentials file as `orbit-admin bootstrap --worker-access` writes it, and checks its
// two output lines exactly, then what it left behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RowDataPacket } from 'mysql2/promise';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { endOfFileChecks } from './support/fixture.js';
import { limitedCredential } from './support/contract.js';
import { packageRoot } from '../server/paths.js';

let db: TestDb;
let gw: GatewayProcess;
let dir: string;
let credFile: string;
let namespaceId: string;

beforeAll(async () => {
  db = await createTestDb();
  gw = await startGateway(db.dsn);
  const t = await newTenant(db, { workerAccess: true });
  namespaceId = t.namespace_id;
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
    const child = spawn(process.execPath, [path.join(packageRoot(), 'dist/examples/schedules/main.js')], {
      env: { ...process.env, ORBIT_TOKEN: undefined, ORBIT_URL: undefined, ...env },
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

describe('examples/schedules', () => {
  it('prints the two lines exactly and exits 0 within 20 s', async () => {
    const r = await runExample({ ORBIT_CREDENTIALS_FILE: credFile });
    expect(r.stdout, r.stderr).toBe('fires=3 distinct_times=3 tasks_succeeded=3\npaused=true retired=true\n');
    expect(r.code, r.stderr).toBe(0);
    expect(r.ms).toBeLessThan(20_000);
    // What it left: one retired schedule; its first three fires one second apart, each a task that
    // succeeded; no task of it unfinished once the worker drained (a fourth fire may have come
    // before the pause: then it is waiting for a worker, which the example does not claim).
    const [s] = await db.pool.query<RowDataPacket[]>('SELECT id, paused, retired_at FROM schedules');
    expect(s).toHaveLength(1);
    expect(Number(s[0]!.paused)).toBe(1);
    expect(s[0]!.retired_at).not.toBeNull();
    const [fires] = await db.pool.query<RowDataPacket[]>(
      "SELECT f.scheduled_for, f.outcome, t.state FROM schedule_fires f JOIN tasks t ON t.id = f.task_id WHERE f.schedule_id = ? ORDER BY f.scheduled_for LIMIT 3",
      [s[0]!.id],
    );
    expect(fires.map((f) => [f.outcome, f.state])).toEqual([
      ['created', 'SUCCEEDED'],
      ['created', 'SUCCEEDED'],
      ['created', 'SUCCEEDED'],
    ]);
    const ms = fires.map((f) => Date.parse(String(f.scheduled_for).replace(' ', 'T') + 'Z'));
    expect([ms[1]! - ms[0]!, ms[2]! - ms[1]!]).toEqual([1000, 1000]);
  }, 40_000);

  it('exits non-zero with one clear line when the credential lacks schedules:manage', async () => {
    const c = await limitedCredential(db, namespaceId, ['queues:manage', 'tasks:read', 'workers:connect', 'workers:consume']);
    const file = path.join(dir, 'limited.json');
    fs.writeFileSync(file, JSON.stringify({ url: gw.url, token: c.token }), { mode: 0o600 });
    const r = await runExample({ ORBIT_CREDENTIALS_FILE: file });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^schedules: .*schedules:manage/);
  });
});
