// docs/design.md "Coalesced transactions": every transaction touches the rows of exactly one application, so the
// data can be sharded by application_id with every transaction single-shard. This test proves it
// on the real schema: triggers record the application of every row each committed transaction
// writes (test/support/app-audit.ts explains how the transaction is identified and what is out of
// scope), then a mixed workload of three applications runs *concurrently* against a real gateway
// process, so that any batching of work from different applications into one transaction (HTTP
// command coalescing, coalesced start/result frames, sweeper rounds) shows up as a transaction
// with rows of two applications. The test fails on any such transaction and lists its rows.
import { beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { AUDIT_TABLE, auditByTransaction, describeTrx, distinctKeys, installAppAudit, unclassifiedTables, type AuditTrx } from './support/app-audit.js';
import { autoWorker, type AutoWorker, type Mode } from './support/auto-worker.js';
import { submitMany } from './support/bulk.js';
import { newTenant } from './support/db.js';
import { ack, createSub, lease } from './support/events.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { waitFor } from './support/wait.js';
import { setTaskTime } from './support/waiting.js';
import { workflowViolations } from './support/workflow-invariants.js';

// A short sweep interval: the lease/deadline expiry phase waits for one sweep round, not 500 ms.
const f = useGatewayFixture({ tenant: false, gatewayEnv: { ORBIT_SWEEP_INTERVAL_MS: '100' } });

interface Tenant {
  label: string;
  t: CredentialsFile;
  main: string;
  hold: string;
  /** Queue of the workflow steps (kept apart from main, whose events the test counts). */
  flow: string;
  holdRevision: string;
  sub: string;
  workers: AutoWorker[];
  holdTasks: string[];
}

const tenants: Tenant[] = [];
/** application id → label, for readable failure reports. */
const names = new Map<string, string>();

// Attempt-1 behaviour of the main-queue tasks of every tenant; keyed ones share two resource keys
// per namespace so the permit/fencing rows (resource_keys) are written too.
const MAIN: { mode: Mode; key?: string }[] = [
  ...Array.from({ length: 6 }, () => ({ mode: 'ok' as const })),
  ...Array.from({ length: 4 }, (_, i) => ({ mode: 'ok' as const, key: `k${i % 2}` })),
  { mode: 'fail' },
  { mode: 'fail' },
  { mode: 'fail', key: 'k0' },
  { mode: 'retry' },
  { mode: 'retry' },
  { mode: 'retry', key: 'k1' },
  { mode: 'unknown' },
  { mode: 'unknown' },
  { mode: 'direct' },
  { mode: 'direct' },
  { mode: 'park-leased' },
  { mode: 'park-running' },
  { mode: 'park-cancel' },
];
// Submitted through POST /v1/tasks:batch, as two concurrent requests of three per tenant.
const BATCH: Mode[] = ['ok', 'fail', 'retry', 'ok', 'direct', 'unknown'];
const HOLD_TASKS = 6; // paused queue: 2 cancelled while waiting, 2 deadline-expired, 2 run after resume

// Commands carry an Idempotency-Key; null sends none (the batch endpoint keys each task itself).
const post = (tn: Tenant, path: string, body: unknown, key: string | null = ikey('s')) =>
  call(f.gw.url, 'POST', path, { token: tn.t.token, body, ...(key === null ? {} : { key }) });
const ok = <R extends { status: number; text: string }>(r: R, what: string): R => {
  if (r.status !== 200 && r.status !== 201) throw new Error(`${what}: ${r.status} ${r.text}`);
  return r;
};
const body = (queueId: string, mode: Mode, key?: string) => ({
  queue_id: queueId,
  handler: 'h',
  handler_version: 'v1',
  payload_version: 'v1',
  payload: { mode },
  max_attempts: 3,
  ...(key === undefined ? {} : { concurrency_key: key }),
});
/** Runs `fn` for every tenant at once: concurrency across applications is the point of the test. */
const all = <T>(fn: (tn: Tenant) => Promise<T>) => Promise.all(tenants.map(fn));

async function sqlRows(sql: string, args: unknown[]): Promise<RowDataPacket[]> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>(sql, args);
  return rows;
}

beforeAll(async () => {
  // Before any tenant exists, so bootstrap transactions are recorded too.
  await installAppAudit(f.db.pool);
  for (const label of ['alpha', 'bravo', 'charlie']) {
    const t = await newTenant(f.db, { application: `scale-${label}-${process.pid}` });
    names.set(t.application_id, label);
    tenants.push({ label, t, main: '', hold: '', flow: '', holdRevision: '', sub: '', workers: [], holdTasks: [] });
  }
});

describe('scale-out: every transaction touches the rows of one application', () => {
  it('a concurrent mixed workload of three applications never writes two applications in one transaction', async () => {
    let acked: number[];
    try {
      acked = await workload();
    } finally {
      // Closed even when the workload fails, so the file reports that failure and not a leak.
      const ws = tenants.flatMap((tn) => tn.workers);
      for (const w of ws) w.close();
      await Promise.all(ws.map((w) => w.w.closed));
    }
    for (const tn of tenants) for (const w of tn.workers) expect(w.errors, `${tn.label}: unexpected error frames`).toEqual([]);
    // Every main-queue task produced one terminal event; the 4 that went through review (worker
    // `unknown` ×2 of MAIN and 1 of BATCH, the expired RUNNING attempt) a needs_review one before.
    for (const n of acked) expect(n).toBe(MAIN.length + BATCH.length + 4);

    // The property.
    expect(await unclassifiedTables(f.db.pool), 'tables neither audited nor declared out of scope').toEqual([]);
    const txs = [...(await auditByTransaction(f.db.pool)).values()];
    const mixed = txs.filter((t) => t.apps.size > 1);
    const unattributed = txs.filter((t) => t.unattributed.length > 0);
    const coalescedCommands = txs.filter((t) => distinctKeys(t, 'receipts') > 1);
    // Only a start frame writes an attempt RUNNING: ≥2 of them in one transaction = coalesced frames.
    const coalescedFrames = txs.filter((t) => new Set(t.rows.filter((r) => r.table === 'attempts' && r.detail === 'RUNNING').map((r) => r.key)).size > 1);
    const summary =
      `${txs.length} transactions; ${coalescedCommands.length} coalesced ≥2 HTTP commands (max ${Math.max(0, ...coalescedCommands.map((t) => distinctKeys(t, 'receipts')))}), ` +
      `${coalescedFrames.length} coalesced ≥2 start frames; ` +
      `${mixed.length} span two or more applications`;
    process.stdout.write(`scale-out audit: ${summary}\n`);

    // The recorder saw every application, and the workload did batch work into shared
    // transactions: without both, an empty `mixed` would prove nothing.
    expect(new Set(txs.flatMap((t) => [...t.apps])).size).toBe(tenants.length);
    expect(coalescedCommands.length, summary).toBeGreaterThan(0);
    expect(coalescedFrames.length, summary).toBeGreaterThan(0);
    expect(
      unattributed.map((t) => describeTrx(t, names)),
      'rows whose application is unknown',
    ).toEqual([]);
    expect(mixed.length, `${summary}\n${report(mixed)}`).toBe(0);
  });
});

/** The mixed workload, every phase for all three applications at once; returns the deliveries
 * each tenant's subscription acknowledged. */
async function workload(): Promise<number[]> {
  // Setup over HTTP, all tenants at once (queue and subscription creation are coalesced commands).
  await all(async (tn) => {
    const [m, h, fl] = await Promise.all(
      ['main', 'hold', 'flow'].map((n) => post(tn, '/v1/queues', { name: `${n}-${tn.label}`, lease_seconds: 5 }).then((r) => ok(r, 'create queue'))),
    );
    tn.main = m!.body.data.queue.id;
    tn.hold = h!.body.data.queue.id;
    tn.flow = fl!.body.data.queue.id;
    const [paused, sub] = await Promise.all([
      post(tn, `/v1/queues/${tn.hold}:pause`, { expected_revision: '1' }).then((r) => ok(r, 'pause')),
      createSub(f.gw.url, tn.t.token, {
        name: `all-${tn.label}`,
        queue_id: tn.main,
        event_types: ['task.succeeded', 'task.failed', 'task.cancelled', 'task.deadline_exceeded', 'task.needs_review'],
      }),
    ]);
    tn.holdRevision = String(paused.body.data.queue.revision);
    tn.sub = sub.id;
    tn.workers = await Promise.all([0, 1].map(() => autoWorker(f.gw.url, tn.t, [tn.main, tn.hold, tn.flow])));
  });
  const sessionsOpenedAt = Date.now();

  // Submissions, all applications at once: single submits and batch submits side by side.
  await all(async (tn) => {
    const batches = [0, 3].map((from) =>
      post(
        tn,
        '/v1/tasks:batch',
        { tasks: BATCH.slice(from, from + 3).map((m, i) => ({ ...body(tn.main, m), idempotency_key: `${tn.label}-b${from + i}` })) },
        null,
      ),
    );
    const [replies, , hold] = await Promise.all([
      Promise.all(batches),
      submitMany(
        f.gw.url,
        tn.t.token,
        MAIN.map((x) => body(tn.main, x.mode, x.key)),
        { concurrency: 6, keyPrefix: `${tn.label}-m` },
      ),
      submitMany(
        f.gw.url,
        tn.t.token,
        Array.from({ length: HOLD_TASKS }, () => body(tn.hold, 'ok')),
        { concurrency: 3, keyPrefix: `${tn.label}-h` },
      ),
    ]);
    for (const b of replies) {
      ok(b, 'batch submit');
      expect(
        b.body.data.results.map((x: { status: number }) => x.status),
        b.text,
      ).toEqual([201, 201, 201]);
    }
    tn.holdTasks = hold;
  });

  // Workflow runs, all applications at once: run starts (receipt-bearing commands), signals, and
  // advancement inside the coalesced result transactions — a fan-out that fails FOR_EACH_INVALID
  // (the auto worker's output is an object), a signal step, a keyed step (use_run_key, two runs on
  // one key) and a compensation step.
  await all(async (tn) => {
    const task = (handler: string, extra: Record<string, unknown> = {}) => ({
      queue_id: tn.flow,
      handler,
      handler_version: 'v1',
      payload_version: 'v1',
      ...extra,
    });
    const wf = ok(
      await post(tn, '/v1/workflows', {
        name: `flow-${tn.label}`,
        version: {
          steps: [
            { key: 'list', task: task('h') },
            { key: 'each', after: ['list'], for_each: 'list', task: task('h') },
            { key: 'approve', after: ['list'], signal: { name: 'go' } },
            { key: 'pub', after: ['approve'], task: task('h', { use_run_key: true }) },
            { key: 'undo', after: ['each'], run_if: 'any_failed', task: task('h') },
          ],
        },
      }),
      'create workflow',
    ).body.data.workflow.id as string;
    const runs = await Promise.all([0, 1].map(() => post(tn, `/v1/workflows/${wf}/runs`, { concurrency_key: 'object/1' }).then((r) => ok(r, 'start run'))));
    const ids = runs.map((r) => r.body.data.run.id as string);
    await Promise.all(ids.map((id) => post(tn, `/v1/workflow-runs/${id}/signals`, { name: 'go' }).then((r) => ok(r, 'signal'))));
    await waitFor(
      `${tn.label}: workflow runs final`,
      async () => (await sqlRows(`SELECT COUNT(*) AS n FROM workflow_runs WHERE namespace_id = ? AND state = 'FAILED'`, [tn.t.namespace_id]))[0]!.n == 2,
      10_000,
    );
    expect(await workflowViolations(f.db.pool, tn.t.namespace_id)).toEqual([]);
    const steps = await sqlRows(
      `SELECT step_key, state, COUNT(*) AS n FROM workflow_run_steps WHERE namespace_id = ? GROUP BY step_key, state ORDER BY step_key`,
      [tn.t.namespace_id],
    );
    expect(steps.map((r) => `${r.step_key}:${r.state}:${r.n}`)).toEqual([
      'approve:SUCCEEDED:2',
      'each:FAILED:2',
      'list:SUCCEEDED:2',
      'pub:SUCCEEDED:2',
      'undo:SUCCEEDED:2',
    ]);
  });

  // Cancel two waiting tasks of the paused queue while the workers have parked their attempts.
  await all(async (tn) => {
    await Promise.all(tn.holdTasks.slice(0, 2).map((id) => post(tn, `/v1/tasks/${id}:cancel`, {}).then((r) => ok(r, 'cancel waiting'))));
    await waitFor(
      `${tn.label}: parked attempts live`,
      async () => {
        const parked = tn.workers.flatMap((w) => w.parked);
        if (parked.length < 3) return false;
        // park-running sent start: wait until it committed, or the later backdate would be
        // overwritten by the lease that start grants.
        const rows = await sqlRows(`SELECT state FROM attempts WHERE id IN (?) AND state = 'RUNNING'`, [
          parked.filter((p) => p.mode === 'park-running').map((p) => p.attemptId),
        ]);
        return rows.length === 1;
      },
      10_000,
    );
  });

  // Cancel the parked LEASED attempts (a live attempt revoked inside a command transaction).
  await all((tn) =>
    Promise.all(
      tn.workers
        .flatMap((w) => w.parked)
        .filter((p) => p.mode === 'park-cancel')
        .map((p) => post(tn, `/v1/tasks/${p.taskId}:cancel`, {}).then((r) => ok(r, 'cancel live'))),
    ),
  );

  // Lease and deadline expiry: every tenant's rows expire at the same database instant T, so one
  // sweeper round finds the rows of all three applications at once.
  const at = (await sqlRows(`SELECT DATE_FORMAT(UTC_TIMESTAMP(3) + INTERVAL 600000 MICROSECOND, '%Y-%m-%d %H:%i:%s.%f') AS at`, []))[0]!.at as string;
  for (const tn of tenants) {
    // One single-row statement each: the test's own writes must stay single-application too.
    for (const p of tn.workers.flatMap((w) => w.parked).filter((x) => x.mode !== 'park-cancel')) {
      await f.db.pool.query('UPDATE attempts SET lease_expires_at = ? WHERE id = ?', [at, p.attemptId]);
    }
    for (const id of tn.holdTasks.slice(2, 4)) await setTaskTime(f.db.pool, id, 'deadline_at', '?', [at]);
  }
  await all((tn) =>
    waitFor(
      `${tn.label}: expired by the sweeper`,
      async () => {
        const rows = await sqlRows(`SELECT COUNT(*) AS n FROM tasks WHERE namespace_id = ? AND state = 'DEADLINE_EXCEEDED'`, [tn.t.namespace_id]);
        const live = await sqlRows(
          `SELECT COUNT(*) AS n FROM attempts WHERE namespace_id = ? AND state IN ('LEASED','RUNNING') AND lease_expires_at <= UTC_TIMESTAMP(3)`,
          [tn.t.namespace_id],
        );
        return Number(rows[0]!.n) === 2 && Number(live[0]!.n) === 0;
      },
      10_000,
    ),
  );

  // Resume the paused queues; the rest of their tasks run.
  await all(async (tn) => ok(await post(tn, `/v1/queues/${tn.hold}:resume`, { expected_revision: tn.holdRevision }), 'resume'));
  await all((tn) =>
    waitFor(
      `${tn.label}: nothing waiting or live`,
      async () => {
        const rows = await sqlRows(`SELECT COUNT(*) AS n FROM tasks WHERE namespace_id = ? AND state IN ('WAITING','LEASED','RUNNING')`, [tn.t.namespace_id]);
        return Number(rows[0]!.n) === 0;
      },
      10_000,
    ),
  );

  // Resolve every task in review (worker `unknown` and the expired RUNNING attempt).
  await all(async (tn) => {
    const review = await sqlRows(`SELECT id FROM tasks WHERE namespace_id = ? AND state = 'NEEDS_REVIEW'`, [tn.t.namespace_id]);
    expect(review.length).toBe(4);
    await Promise.all(
      review.map((r, i) => post(tn, `/v1/tasks/${r.id}:resolve`, { resolution: i % 2 ? 'failed' : 'succeeded' }).then((x) => ok(x, 'resolve'))),
    );
  });

  // Consume the result streams: lease and ack until nothing is left.
  const acked = await all(async (tn) => {
    let n = 0;
    for (let round = 0; round < 50; round++) {
      const ds = await lease(f.gw.url, tn.t.token, tn.sub, 10, 30);
      if (ds.length === 0) break;
      n += await ack(
        f.gw.url,
        tn.t.token,
        tn.sub,
        ds.map((d: { id: string }) => d.id),
      );
    }
    return n;
  });
  // The session heartbeat (last_seen_at of every local session, every 10 sweep ticks: ~1 s here)
  // is periodic node work over sessions of many applications: keep all six sessions open until it
  // has run (a transaction writing only ≥2 worker_sessions rows), or for 3 s in case a fixed
  // heartbeat writes one session per transaction.
  await waitFor(
    'a session heartbeat',
    async () => {
      const rows = await sqlRows(
        `SELECT trx FROM ${AUDIT_TABLE} GROUP BY trx HAVING SUM(table_name = 'worker_sessions' AND op = 'U') = COUNT(*) AND COUNT(*) >= 2 LIMIT 1`,
        [],
      );
      return rows.length > 0 || Date.now() - sessionsOpenedAt > 3000;
    },
    10_000,
  );
  return acked;
}

/** Offending transactions grouped by the set of tables they wrote (the code path), with examples. */
function report(mixed: AuditTrx[]): string {
  const bySignature = new Map<string, AuditTrx[]>();
  for (const t of mixed) {
    const sig = [...new Set(t.rows.map((r) => `${r.table}.${r.op}`))].sort().join(' ');
    bySignature.set(sig, [...(bySignature.get(sig) ?? []), t]);
  }
  return [...bySignature]
    .map(
      ([sig, ts]) =>
        `${ts.length} transaction(s) writing {${sig}}, e.g.\n  ${ts
          .slice(0, 3)
          .map((t) => describeTrx(t, names))
          .join('\n  ')}`,
    )
    .join('\n');
}
