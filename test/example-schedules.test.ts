// Runs the compiled schedules example (dist/examples/schedules/main.js) against a gateway started
// here, with a credentials file as `orbit-admin bootstrap --worker-access` writes it, and checks its
// two output lines exactly, then what it left behind.
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import fs from 'node:fs';
import type { RowDataPacket } from 'mysql2/promise';
import { limitedCredential } from './support/contract.js';
import { runExample, useExampleFixture } from './support/example-fixture.js';

const fx = useExampleFixture();

describe('examples/schedules', () => {
  it('prints the two lines exactly and exits 0 within 20 s', async () => {
    const r = await runExample('schedules', fx.dir, { ORBIT_CREDENTIALS_FILE: fx.credFile });
    expect(r.stdout, r.stderr).toBe('fires=3 distinct_times=3 tasks_succeeded=3\npaused=true retired=true\n');
    expect(r.code, r.stderr).toBe(0);
    expect(r.ms).toBeLessThan(20_000);
    // What it left: one retired schedule; its first three fires one second apart, each a task that
    // succeeded; no task of it unfinished once the worker drained (a fourth fire may have come
    // before the pause: then it is waiting for a worker, which the example does not claim).
    const [s] = await fx.db.pool.query<RowDataPacket[]>('SELECT id, paused, retired_at FROM schedules');
    expect(s).toHaveLength(1);
    expect(Number(s[0]!.paused)).toBe(1);
    expect(s[0]!.retired_at).not.toBeNull();
    const [fires] = await fx.db.pool.query<RowDataPacket[]>(
      'SELECT f.scheduled_for, f.outcome, t.state FROM schedule_fires f JOIN tasks t ON t.id = f.task_id WHERE f.schedule_id = ? ORDER BY f.scheduled_for LIMIT 3',
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
    const c = await limitedCredential(fx.db, fx.tenant.namespace_id, ['queues:manage', 'tasks:read', 'workers:connect', 'workers:consume']);
    const file = path.join(fx.dir, 'limited.json');
    fs.writeFileSync(file, JSON.stringify({ url: fx.gw.url, token: c.token }), { mode: 0o600 });
    const r = await runExample('schedules', fx.dir, { ORBIT_CREDENTIALS_FILE: file });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^schedules: .*schedules:manage/);
  });
});
