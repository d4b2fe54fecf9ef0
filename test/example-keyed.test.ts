// Runs the compiled keyed-concurrency example (dist/examples/keyed-concurrency/main.js) against a
// gateway started here, with a credentials file as `orbit-admin bootstrap` writes it, and checks
// its two output lines exactly.
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import type { RowDataPacket } from 'mysql2/promise';
import { checkHistory } from './support/history.js';
import { assertPermitInvariants } from './support/invariants.js';
import { runExample, useExampleFixture } from './support/example-fixture.js';

const fx = useExampleFixture();

describe('examples/keyed-concurrency', () => {
  it('prints the two lines exactly and exits 0 (twice: queue names are unique per run)', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await runExample('keyed-concurrency', fx.dir, {
        ORBIT_URL: fx.gw.url,
        ORBIT_CREDENTIALS_FILE: fx.credFile,
        ORBIT_EXAMPLE_MYSQL_DSN: fx.db.dsn,
      });
      expect(r.stdout, r.stderr).toBe('queues=2 completed=2 tokens_increasing=true\nresource_writes=2 stale_write_rejected=true worker_drained=true\n');
      expect(r.code, r.stderr).toBe(0);
      expect(r.ms).toBeLessThan(20_000);
    }
    // What it left in Orbit is consistent: 4 queues, 4 tasks done, tokens 1..4 on distinct keys.
    const [q] = await fx.db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM queues WHERE name LIKE 'keyed-example-%'");
    expect(Number(q[0]!.n)).toBe(4);
    const h = await checkHistory(fx.db.pool);
    expect(h.violations).toEqual([]);
    expect(h.byState).toEqual({ SUCCEEDED: 4 });
    await assertPermitInvariants(fx.db.pool);
    const [w] = await fx.db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM orbit_example_writes');
    expect(Number(w[0]!.n)).toBe(4);
  }, 60_000);

  it('exits non-zero with one clear line when the credentials file is missing', async () => {
    const r = await runExample('keyed-concurrency', fx.dir, { ORBIT_CREDENTIALS_FILE: path.join(fx.dir, 'nope.json'), ORBIT_EXAMPLE_MYSQL_DSN: fx.db.dsn });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^keyed-concurrency: cannot read ORBIT_CREDENTIALS_FILE .*nope\.json/);
  });

  it('exits non-zero when the gateway is unreachable', async () => {
    const r = await runExample('keyed-concurrency', fx.dir, {
      ORBIT_URL: 'http://127.0.0.1:9',
      ORBIT_CREDENTIALS_FILE: fx.credFile,
      ORBIT_EXAMPLE_MYSQL_DSN: fx.db.dsn,
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
  });
});
