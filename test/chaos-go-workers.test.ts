// Chaos with Go workers (worker-sdk-go, the process of internal/cmd/workerproc) writing every keyed
// task through the Go fenced resource:
//   1. kill -9 of the gateway while they hold keyed attempts, and a new gateway on the same port:
//      every held attempt is resumed (same attempt and token on a new session, then SUCCEEDED) or
//      ended by the rules (EXPIRED unstarted, UNKNOWN → NEEDS_REVIEW running); no task wrote
//      twice; per key the tokens increase, in grant order and in the fence's commit order.
//   2. SIGSTOP of a Go worker in its handler past its lease: the key goes to a newer attempt on
//      another worker, and once continued the frozen one's late write is rejected by the fence.
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { startGateway } from './support/gateway.js';
import { endOfFileChecks } from './support/fixture.js';
import { spawnGoWorker, type WorkerProcess } from './support/workers.js';
import { goBuild } from './support/go.js';
import { submitTask } from './support/submit.js';
import { checkHistory } from './support/history.js';
import { assertPermitInvariants } from './support/invariants.js';
import { createFencedResource } from '../worker-sdk/fenced-resource.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { sleep, waitFor } from './support/wait.js';

let db: TestDb;
let t: CredentialsFile;
let dir: string;
let bin: string;
const procs: WorkerProcess[] = [];

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-go-chaos-'));
  bin = path.join(dir, 'workerproc');
  await goBuild('./internal/cmd/workerproc', bin);
  db = await createTestDb();
  t = await newTenant(db, { queues: ['kill', 'stop'] });
  // The Node SDK creates the fence tables the Go workers write: one shape for both SDKs.
  await createFencedResource(db.pool, { table: 'chaos_fence' }).ensureSchema();
  await db.pool.query(
    `CREATE TABLE chaos_writes (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, resource_key VARBINARY(768) NOT NULL, token BIGINT UNSIGNED NOT NULL,
       attempt_id CHAR(32) NOT NULL, task_id CHAR(32) NOT NULL, pid INT NOT NULL, PRIMARY KEY (id)) ENGINE=InnoDB`,
  );
}, 240_000);
afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGCONT');
  try {
    await endOfFileChecks(db);
  } finally {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }
});

function goWorker(url: string, queue: string, env: Record<string, string>): WorkerProcess {
  const p = spawnGoWorker(bin, url, t.token, [queue], { FENCE_DSN: db.dsn, FENCE_NAMESPACE: t.namespace_id, ...env });
  procs.push(p);
  return p;
}

async function rows(sql: string, params: unknown[] = []): Promise<RowDataPacket[]> {
  const [r] = await db.pool.query<RowDataPacket[]>(sql, params);
  return r;
}

/** Per key, the writes in commit order and the attempts in grant order carry strictly increasing tokens. */
async function assertTokensIncrease(keys: string[]): Promise<void> {
  for (const key of keys) {
    const writes = (await rows('SELECT CAST(token AS CHAR) AS token FROM chaos_writes WHERE resource_key = ? ORDER BY id', [key])).map((r) => BigInt(r.token));
    for (let i = 1; i < writes.length; i++) expect(writes[i]! > writes[i - 1]!, `${key} writes ${writes.join(',')}`).toBe(true);
    const grants = (
      await rows(
        `SELECT CAST(a.concurrency_token AS CHAR) AS token FROM attempts a JOIN tasks k ON k.id = a.task_id
          WHERE k.concurrency_key = ? ORDER BY a.leased_at, a.concurrency_token`,
        [key],
      )
    ).map((r) => BigInt(r.token));
    for (let i = 1; i < grants.length; i++) expect(grants[i]! > grants[i - 1]!, `${key} grants ${grants.join(',')}`).toBe(true);
  }
}

describe('Go workers under chaos', () => {
  it('kill -9 of the gateway while Go workers hold keyed attempts: resumed or expired by the rules, no duplicate effect, tokens increasing', async () => {
    const queue = t.queues.kill!;
    await db.pool.query('UPDATE queues SET lease_seconds = 10 WHERE id = ?', [queue]);
    let gw = await startGateway(db.dsn, { ORBIT_NODE_ID: 'go-chaos-1' });
    const port = Number(new URL(gw.url).port);
    const workers = [0, 1].map(() => goWorker(gw.url, queue, { WORKER_CAPACITY: '4', WORKER_DELAY_MS: '2500' }));
    await Promise.all(workers.map((w) => w.ready));
    const keys = [0, 1, 2, 3].map((k) => `go-chaos/object-${k}`);
    const taskIds: string[] = [];
    for (let i = 0; i < 16; i++) {
      const task = await submitTask(gw.url, t, { queue_id: queue, concurrency_key: keys[i % 4]!, payload: { i } }, `go-kill-${i}`);
      taskIds.push(task.id);
    }
    // Kill the gateway while attempts are held (one per key at most: the key's permit).
    const held = await waitFor(
      'Go workers holding keyed attempts',
      async () => {
        const live = await rows("SELECT id, session_id, state, CAST(concurrency_token AS CHAR) AS token FROM attempts WHERE state IN ('LEASED', 'RUNNING')");
        return live.length >= 3 ? live : undefined;
      },
      15_000,
    );
    await gw.kill9();
    await sleep(500);
    gw = await startGateway(db.dsn, { ORBIT_NODE_ID: 'go-chaos-2' }, port);

    await waitFor(
      'every task terminal or in review',
      async () => {
        const open = await rows("SELECT COUNT(*) AS n FROM tasks WHERE queue_id = ? AND state IN ('WAITING', 'LEASED', 'RUNNING')", [queue]);
        return Number(open[0]!.n) === 0;
      },
      60_000,
    );

    // Every attempt held at the kill: resumed (same attempt, same token, a new session) or ended
    // by the rules.
    let resumed = 0;
    for (const h of held) {
      const [a] = await rows('SELECT state, session_id, CAST(concurrency_token AS CHAR) AS token FROM attempts WHERE id = ?', [h.id]);
      expect(a!.token).toBe(h.token);
      expect(['SUCCEEDED', 'EXPIRED', 'UNKNOWN'], `attempt ${h.id} was ${h.state}`).toContain(a!.state);
      if (a!.state === 'SUCCEEDED' && a!.session_id !== h.session_id) resumed++;
      if (a!.state === 'EXPIRED') expect(h.state).toBe('LEASED');
    }
    expect(resumed, 'at least one held attempt resumed on a new session and succeeded').toBeGreaterThan(0);

    // No duplicate effect: at most one write per task, and a succeeded task's write is its
    // succeeded attempt's, with that attempt's token.
    const dup = await rows('SELECT task_id, COUNT(*) AS n FROM chaos_writes GROUP BY task_id HAVING n > 1');
    expect(dup).toEqual([]);
    const succeeded = await rows(
      `SELECT a.task_id, a.id, CAST(a.concurrency_token AS CHAR) AS token FROM attempts a JOIN tasks k ON k.id = a.task_id
        WHERE k.queue_id = ? AND a.state = 'SUCCEEDED'`,
      [queue],
    );
    expect(succeeded.length).toBeGreaterThan(0);
    for (const s of succeeded) {
      const w = await rows('SELECT attempt_id, CAST(token AS CHAR) AS token FROM chaos_writes WHERE task_id = ?', [s.task_id]);
      expect(w.map((x) => [x.attempt_id, x.token])).toEqual([[s.id, s.token]]);
    }
    await assertTokensIncrease(keys);
    const h = await checkHistory(db.pool);
    expect(h.violations).toEqual([]);
    await assertPermitInvariants(db.pool);
    for (const w of workers) expect(w.lines.filter((l) => l.ev === 'fatal')).toEqual([]);
    await Promise.all(workers.map((w) => w.stop()));
    await gw.stop();
  }, 120_000);

  it('SIGSTOP of a Go worker past its lease: its late write is rejected by the fence', async () => {
    const queue = t.queues.stop!;
    await db.pool.query('UPDATE queues SET lease_seconds = 2 WHERE id = ?', [queue]);
    const gw = await startGateway(db.dsn, { ORBIT_NODE_ID: 'go-chaos-3' });
    const key = 'go-chaos/frozen';
    const frozen = goWorker(gw.url, queue, { WORKER_CAPACITY: '1', WORKER_HOLD_MS: '1500' });
    await frozen.ready;
    const t1 = await submitTask(gw.url, t, { queue_id: queue, concurrency_key: key }, 'go-stop-1');
    const begin = await waitFor('the handler began', () => frozen.lines.find((l) => l.ev === 'begin'), 10_000);
    frozen.child.kill('SIGSTOP'); // inside its 1.5 s hold, before the write
    const [a1] = await waitFor(
      'the frozen attempt expired',
      async () => {
        const r = await rows("SELECT id, state, CAST(concurrency_token AS CHAR) AS token FROM attempts WHERE task_id = ? AND state = 'UNKNOWN'", [t1.id]);
        return r.length === 1 ? r : undefined;
      },
      15_000,
    );
    expect(a1!.id).toBe(begin.attempt);

    // The key is free again: a second task of the key goes to another Go worker with a newer token.
    const other = goWorker(gw.url, queue, { WORKER_CAPACITY: '1' });
    await other.ready;
    const t2 = await submitTask(gw.url, t, { queue_id: queue, concurrency_key: key }, 'go-stop-2');
    const w2 = await waitFor('the newer attempt wrote', () => other.lines.find((l) => l.ev === 'write'), 15_000);
    expect(BigInt(w2.token) > BigInt(a1!.token)).toBe(true);

    // Continued, the frozen handler wakes up as a zombie and tries its write with the old token.
    frozen.child.kill('SIGCONT');
    const stale = await waitFor('the late write was rejected', () => frozen.lines.find((l) => l.ev === 'stale' || l.ev === 'write'), 15_000);
    expect(stale).toMatchObject({ ev: 'stale', attempt: a1!.id, token: a1!.token, highest: w2.token });
    const writes = await rows('SELECT attempt_id, task_id FROM chaos_writes WHERE resource_key = ?', [key]);
    expect(writes.map((w) => w.task_id)).toEqual([t2.id]);
    await waitFor('the newer task succeeded', async () => (await rows('SELECT state FROM tasks WHERE id = ?', [t2.id]))[0]!.state === 'SUCCEEDED', 10_000);
    expect((await rows('SELECT state FROM tasks WHERE id = ?', [t1.id]))[0]!.state).toBe('NEEDS_REVIEW');
    await assertTokensIncrease([key]);
    const h = await checkHistory(db.pool);
    expect(h.violations).toEqual([]);
    await assertPermitInvariants(db.pool);
    await Promise.all([frozen.stop(), other.stop()]);
    await gw.stop();
  }, 90_000);
});
