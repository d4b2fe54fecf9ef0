// Fenced-helper chaos run: two gateway nodes, four SDK worker processes (bench/fenced-worker-proc)
// that write every keyed task through the SDK's fenced resource on MySQL. One worker is frozen with
// SIGSTOP past its lease (its handlers wake up as zombies and still try to write), another is
// killed with SIGKILL and replaced. The checker asserts that the fence accepted no stale write:
// per key, the applied writes carry strictly increasing tokens in commit order, each equal to the
// Orbit attempt's own token; plus the usual history and permit invariants.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { endOfFileChecks } from './support/fixture.js';
import { spawnWorker, waitFor, type WorkerProcess } from './support/workers.js';
import { submitMany } from './support/bulk.js';
import { checkHistory } from './support/history.js';
import { assertPermitInvariants } from './support/invariants.js';
import { createFencedResource } from '../worker-sdk/fenced-resource.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';

let db: TestDb;
let t: CredentialsFile;
const gateways: GatewayProcess[] = [];
const procs: WorkerProcess[] = [];

function spawnFenced(url: string): WorkerProcess {
  const p = spawnWorker(
    url,
    t.token,
    [t.queue_id],
    { WORKER_CAPACITY: '4', WORKER_DELAY_MS: '40', FENCE_DSN: db.dsn, FENCE_NAMESPACE: t.namespace_id },
    'dist/bench/fenced-worker-proc.js',
  );
  procs.push(p);
  return p;
}

beforeAll(async () => {
  db = await createTestDb();
  t = await newTenant(db);
  await db.pool.query('UPDATE queues SET lease_seconds = 2');
  await createFencedResource(db.pool, { table: 'chaos_fence' }).ensureSchema();
  await db.pool.query(
    `CREATE TABLE chaos_writes (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, resource_key VARBINARY(768) NOT NULL, token BIGINT UNSIGNED NOT NULL,
       attempt_id CHAR(32) NOT NULL, task_id CHAR(32) NOT NULL, pid INT NOT NULL, PRIMARY KEY (id)) ENGINE=InnoDB`,
  );
  for (let i = 0; i < 2; i++) gateways.push(await startGateway(db.dsn, { ORBIT_NODE_ID: `fenced-${i}` }));
});
afterAll(async () => {
  // A worker frozen with SIGSTOP must be continued before it can die.
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGCONT');
  await endOfFileChecks(db); // kills and checks every worker process
});

describe('fenced resource under chaos', () => {
  it('accepts no stale write while workers are frozen past their lease and killed', async () => {
    const url = (i: number) => gateways[i % 2]!.url;
    const workers = [0, 1, 2, 3].map((i) => spawnFenced(url(i)));
    await Promise.all(workers.map((w) => w.ready));
    const N = 200;
    const tasks = Array.from({ length: N }, (_, i) => ({
      queue_id: t.queue_id,
      handler: 'h',
      handler_version: 'v1',
      payload_version: 'v1',
      payload: { i },
      concurrency_key: `fenced/${i % 10}`,
    }));
    let rr = 0;
    const submitting = submitMany(() => url(rr++), t.token, tasks, { concurrency: 8 });
    const done = async () => {
      const [r] = await db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM tasks WHERE state IN ('SUCCEEDED','NEEDS_REVIEW')");
      return Number(r[0]!.n);
    };
    await waitFor(async () => (await done()) >= 40, 60_000, '40 tasks done');
    // Freeze worker 0 (its in-flight handlers become zombies), kill worker 1 and replace it.
    workers[0]!.child.kill('SIGSTOP');
    workers[1]!.child.kill('SIGKILL');
    spawnFenced(url(1));
    await new Promise((r) => setTimeout(r, 4000)); // past the 2 s lease: the sweeper takes the keys back
    workers[0]!.child.kill('SIGCONT');
    await submitting;
    const final = await waitFor(
      async () => {
        const [r] = await db.pool.query<RowDataPacket[]>('SELECT state, COUNT(*) AS n FROM tasks GROUP BY state');
        const c = Object.fromEntries(r.map((x) => [x.state, Number(x.n)]));
        return (c.WAITING ?? 0) + (c.LEASED ?? 0) + (c.RUNNING ?? 0) === 0 ? c : null;
      },
      60_000,
      'every task settled',
      250,
    );
    expect((final.SUCCEEDED ?? 0) + (final.NEEDS_REVIEW ?? 0)).toBe(N);

    // The fence accepted no stale write: per key, tokens strictly increase in commit order.
    const [writes] = await db.pool.query<RowDataPacket[]>(
      'SELECT id, HEX(resource_key) AS k, CAST(token AS CHAR) AS token, attempt_id, task_id FROM chaos_writes ORDER BY id',
    );
    const lastByKey = new Map<string, bigint>();
    const stale: string[] = [];
    for (const w of writes) {
      const tok = BigInt(w.token);
      const prev = lastByKey.get(w.k);
      if (prev !== undefined && tok <= prev) stale.push(`key ${w.k}: write ${w.id} with token ${tok} after ${prev}`);
      lastByKey.set(w.k, tok);
    }
    expect(stale).toEqual([]);
    // Each write used its own attempt's token, and the fence never ran ahead of Orbit's row.
    const [mismatch] = await db.pool.query<RowDataPacket[]>(
      'SELECT w.id FROM chaos_writes w LEFT JOIN attempts a ON a.id = w.attempt_id WHERE a.id IS NULL OR a.concurrency_token <> w.token OR a.task_id <> w.task_id',
    );
    expect(mismatch).toEqual([]);
    const [ahead] = await db.pool.query<RowDataPacket[]>(
      'SELECT f.resource_key FROM chaos_fence f JOIN resource_keys r ON r.concurrency_key = f.resource_key AND r.namespace_id = f.namespace WHERE f.highest_token > r.highest_token',
    );
    expect(ahead).toEqual([]);
    // Every succeeded task wrote exactly once (operation id = attempt id, one succeeded attempt).
    const [succ] = await db.pool.query<RowDataPacket[]>(
      "SELECT t.id, (SELECT COUNT(*) FROM chaos_writes w WHERE w.task_id = t.id) AS n FROM tasks t WHERE t.state = 'SUCCEEDED' HAVING n <> 1",
    );
    expect(succ).toEqual([]);
    const rejected = procs.flatMap((p) => p.lines.filter((l) => l.ev === 'stale'));
    // Every rejection was a genuinely older token than one the fence had seen.
    for (const r of rejected) expect(BigInt(r.token) < BigInt(r.highest)).toBe(true);
    console.log(`fenced chaos: ${writes.length} writes applied, ${rejected.length} stale writes rejected, final ${JSON.stringify(final)}`);

    const h = await checkHistory(db.pool);
    expect(h.violations).toEqual([]);
    await assertPermitInvariants(db.pool);
  }, 180_000);
});
