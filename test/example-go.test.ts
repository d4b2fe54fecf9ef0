// The Go SDK's examples (worker-sdk-go/examples/, `go run ./examples/NAME` from worker-sdk-go/),
// built once and run against a gateway started here with a credentials file as `orbit-admin
// bootstrap` writes it: the same output as their Node twins (example-keyed, example-workflow).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { checkHistory } from './support/history.js';
import { assertPermitInvariants } from './support/invariants.js';
import { useExampleFixture, type ExampleRun } from './support/example-fixture.js';
import { goBuild } from './support/go.js';

const fx = useExampleFixture();
const bin = (name: string) => path.join(fx.dir, `go-${name}`);

beforeAll(async () => {
  for (const name of ['keyed-concurrency', 'resource-lifecycle', 'workflow']) await goBuild(`./examples/${name}`, bin(name));
}, 240_000);

function run(name: string, env: Record<string, string>): Promise<ExampleRun> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(bin(name), [], {
      env: { ...process.env, ORBIT_MYSQL_DSN: undefined, ORBIT_TOKEN: undefined, ORBIT_URL: undefined, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: fx.dir,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
  });
}

describe('worker-sdk-go/examples', () => {
  it('keyed-concurrency prints the two lines exactly and exits 0 (twice: names are unique per run)', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await run('keyed-concurrency', { ORBIT_URL: fx.gw.url, ORBIT_CREDENTIALS_FILE: fx.credFile, ORBIT_EXAMPLE_MYSQL_DSN: fx.db.dsn });
      expect(r.stdout, r.stderr).toBe('queues=2 completed=2 tokens_increasing=true\nresource_writes=2 stale_write_rejected=true worker_drained=true\n');
      expect(r.code, r.stderr).toBe(0);
      expect(r.ms).toBeLessThan(20_000);
    }
    const [q] = await fx.db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM queues WHERE name LIKE 'keyed-example-%'");
    expect(Number(q[0]!.n)).toBe(4);
    const [w] = await fx.db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM orbit_example_writes');
    expect(Number(w[0]!.n)).toBe(4);
    await assertPermitInvariants(fx.db.pool);
  }, 60_000);

  it('keyed-concurrency exits 1 with one clear line when the credentials file is missing', async () => {
    const r = await run('keyed-concurrency', { ORBIT_CREDENTIALS_FILE: path.join(fx.dir, 'nope.json'), ORBIT_EXAMPLE_MYSQL_DSN: fx.db.dsn });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^keyed-concurrency: cannot read ORBIT_CREDENTIALS_FILE .*nope\.json/);
  });

  it('keyed-concurrency exits 1 within its deadline when the gateway is unreachable', async () => {
    const r = await run('keyed-concurrency', { ORBIT_URL: 'http://127.0.0.1:9', ORBIT_CREDENTIALS_FILE: fx.credFile, ORBIT_EXAMPLE_MYSQL_DSN: fx.db.dsn });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.ms).toBeLessThan(21_000);
  }, 30_000);

  it('resource-lifecycle retires the subscription, then the queue', async () => {
    const r = await run('resource-lifecycle', { ORBIT_URL: fx.gw.url, ORBIT_CREDENTIALS_FILE: fx.credFile });
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^queue_id=[0-9a-f]{32} name=lifecycle-/);
    expect(lines[1]).toMatch(/^subscription_id=[0-9a-f]{32} cursor=\d+$/);
    expect(lines[2]).toMatch(/^subscription_retired=true retired_sequence=\d+$/);
    expect(lines[3]).toMatch(/^queue_retired=true retired_at=\d{4}-\d\d-\d\dT/);
    const queueId = /queue_id=(\w+)/.exec(lines[0]!)![1];
    const [rows] = await fx.db.pool.query<RowDataPacket[]>('SELECT retired_at FROM queues WHERE id = ?', [queueId]);
    expect(rows[0]!.retired_at).not.toBeNull();
  }, 30_000);

  it('workflow runs five steps, seven tasks and a consumed signal', async () => {
    const r = await run('workflow', { ORBIT_URL: fx.gw.url, ORBIT_CREDENTIALS_FILE: fx.credFile });
    expect(r.stdout, r.stderr).toBe('run=SUCCEEDED steps=5 tasks=7 signal=consumed\n');
    expect(r.code, r.stderr).toBe(0);
    const h = await checkHistory(fx.db.pool);
    expect(h.violations).toEqual([]);
  }, 30_000);
});
