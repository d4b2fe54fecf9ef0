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
import { spawnWorker, type WorkerProcess } from './support/workers.js';
import { submitMany } from './support/bulk.js';
import { checkHistory } from './support/history.js';
import { assertPermitInvariants } from './support/invariants.js';
import { createFencedResource } from '../worker-sdk/fenced-resource.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { waitFor } from './support/wait.js';

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

/** SIGSTOPs `w` at a moment it holds a live keyed attempt that has not written yet: its handler is
 * in the delay before its write, so it writes as a zombie after SIGCONT. Retries (continue, let it
 * run a little, stop again) until it does; returns those attempts. */
async function freezeWithZombies(w: WorkerProcess): Promise<{ id: string }[]> {
  for (let i = 0; i < 50; i++) {
    w.child.kill('SIGSTOP');
    // The database round trip also lets the lines it printed before the stop arrive.
    const [rows] = await db.pool.query<RowDataPacket[]>("SELECT id FROM attempts WHERE state = 'RUNNING' AND concurrency_key IS NOT NULL");
    const running = new Set(rows.map((r) => r.id as string));
    const writing = new Set(w.lines.filter((l) => l.ev === 'writing').map((l) => l.attempt as string));
    // In the delay before the write: not mid-write, whose fence-row lock would block the key.
    const waiting = w.lines.filter((l) => l.ev === 'begin' && !writing.has(l.attempt) && running.has(l.attempt)).map((l) => ({ id: l.attempt as string }));
    if (waiting.length > 0) return waiting;
    w.child.kill('SIGCONT');
    await new Promise((r) => setTimeout(r, 20 + Math.random() * 40));
  }
  throw new Error('worker 0 never held a keyed attempt before its write');
}

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
    await waitFor('40 tasks done', async () => (await done()) >= 40, 60_000);
    // Freeze worker 0 while it holds a keyed attempt whose handler has not written yet (a zombie
    // to be), kill worker 1 and replace it.
    const zombies = await freezeWithZombies(workers[0]!);
    workers[1]!.child.kill('SIGKILL');
    spawnFenced(url(1));
    // Until the sweeper took the frozen leases back and, for a zombie's key, another attempt held
    // the key and wrote with a larger token: then the zombie's write is stale for sure.
    await waitFor(
      "the sweeper took the frozen worker's leases",
      async () => {
        const [live] = await db.pool.query<RowDataPacket[]>(
          `SELECT COUNT(*) AS n FROM attempts WHERE id IN (${zombies.map(() => '?').join(',')}) AND state IN ('LEASED','RUNNING')`,
          zombies.map((z) => z.id),
        );
        return Number(live[0]!.n) === 0;
      },
      { timeout: 30_000, interval: 100 },
    );
    const overtaken = await waitFor(
      "another worker's write on a zombie's key",
      async () => {
        const [r] = await db.pool.query<RowDataPacket[]>(
          `SELECT a.id FROM attempts a JOIN chaos_fence f ON f.resource_key = a.concurrency_key AND f.namespace = a.namespace_id
             WHERE a.id IN (${zombies.map(() => '?').join(',')}) AND f.highest_token > a.concurrency_token`,
          zombies.map((z) => z.id),
        );
        return r.length > 0 ? r.map((x) => x.id as string) : null;
      },
      { timeout: 30_000, interval: 100 },
    );
    workers[0]!.child.kill('SIGCONT');
    await submitting;
    const final = await waitFor(
      'every task settled',
      async () => {
        const [r] = await db.pool.query<RowDataPacket[]>('SELECT state, COUNT(*) AS n FROM tasks GROUP BY state');
        const c = Object.fromEntries(r.map((x) => [x.state, Number(x.n)]));
        return (c.WAITING ?? 0) + (c.LEASED ?? 0) + (c.RUNNING ?? 0) === 0 ? c : null;
      },
      { timeout: 60_000, interval: 250 },
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
    // The zombies whose key was overtaken while they were frozen did try their write, and the fence
    // refused each one (a stale write that got through would also break the ordering above).
    const refused = new Set(workers[0]!.lines.filter((l) => l.ev === 'stale').map((l) => l.attempt as string));
    expect(overtaken.filter((id) => !refused.has(id))).toEqual([]);
    expect(refused.size).toBeGreaterThan(0);
    console.log(`fenced chaos: ${writes.length} writes applied, ${rejected.length} stale writes rejected, final ${JSON.stringify(final)}`);

    const h = await checkHistory(db.pool);
    expect(h.violations).toEqual([]);
    await assertPermitInvariants(db.pool);
  }, 180_000);
});
