// Runs the compiled workflow example (dist/examples/workflow/main.js) against a gateway started here,
// with a credentials file as `orbit-admin bootstrap --worker-access` writes it, and checks its line
// exactly, then what it left in the database: one run, its five steps, seven tasks, the signal.
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import fs from 'node:fs';
import type { RowDataPacket } from 'mysql2/promise';
import { limitedCredential } from './support/contract.js';
import { runExample, useExampleFixture } from './support/example-fixture.js';

const fx = useExampleFixture();

describe('examples/workflow', () => {
  it('prints the line exactly and exits 0 within 20 s', async () => {
    const r = await runExample('workflow', fx.dir, { ORBIT_CREDENTIALS_FILE: fx.credFile });
    expect(r.stdout, r.stderr).toBe('run=SUCCEEDED steps=5 tasks=7 signal=consumed\n');
    expect(r.code, r.stderr).toBe(0);
    expect(r.ms).toBeLessThan(20_000);
    const [runs] = await fx.db.pool.query<RowDataPacket[]>('SELECT id, state FROM workflow_runs');
    expect(runs.map((x) => x.state)).toEqual(['SUCCEEDED']);
    const [steps] = await fx.db.pool.query<RowDataPacket[]>('SELECT step_key, state FROM workflow_run_steps WHERE run_id = ? ORDER BY step_key', [runs[0]!.id]);
    expect(Object.fromEntries(steps.map((s) => [s.step_key, s.state]))).toEqual({
      fetch: 'SUCCEEDED',
      index: 'SUCCEEDED',
      approve: 'SUCCEEDED',
      publish: 'SUCCEEDED',
      undo: 'SKIPPED',
    });
    // Seven tasks, all succeeded: one fetch, five index elements (indexes 0..4), one publish (no index).
    const [tasks] = await fx.db.pool.query<RowDataPacket[]>(
      "SELECT workflow_step AS step, IFNULL(workflow_index, '-') AS i, state FROM tasks WHERE workflow_run_id = ? ORDER BY workflow_step, workflow_index",
      [runs[0]!.id],
    );
    expect(tasks.map((t) => `${t.step}:${t.i}:${t.state}`)).toEqual([
      'fetch:-:SUCCEEDED',
      'index:0:SUCCEEDED',
      'index:1:SUCCEEDED',
      'index:2:SUCCEEDED',
      'index:3:SUCCEEDED',
      'index:4:SUCCEEDED',
      'publish:-:SUCCEEDED',
    ]);
    const [signals] = await fx.db.pool.query<RowDataPacket[]>('SELECT name, state FROM workflow_signals WHERE run_id = ?', [runs[0]!.id]);
    expect(signals.map((s) => [s.name, s.state])).toEqual([['approved', 'CONSUMED']]);
  }, 40_000);

  it('exits non-zero with one clear line when the credential lacks the workflows scopes', async () => {
    const c = await limitedCredential(fx.db, fx.tenant.namespace_id, ['queues:manage', 'tasks:read', 'workers:connect', 'workers:consume']);
    const file = path.join(fx.dir, 'limited.json');
    fs.writeFileSync(file, JSON.stringify({ url: fx.gw.url, token: c.token }), { mode: 0o600 });
    const r = await runExample('workflow', fx.dir, { ORBIT_CREDENTIALS_FILE: file });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^workflow: .*workflows:manage/);
  });
});
