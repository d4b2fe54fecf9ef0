// Waiting heads (migration 000009, server/db/waiting-tasks.ts): the candidate read scans only the
// flagged waiting rows, and returns the same first row of every free key as the scan of every row
// it replaced. Random sequences of submits (priorities, keys, handlers and versions, some with
// not_before), sessions with handler filters claiming, finishing (key hand-offs), retrying with
// backoff and closing (unstarted attempts requeued), and cancels, through a real gateway; after
// each step, in one snapshot: the flag invariant, and the flagged read against today's read for
// several handler filters and times. Then the races the key row's lock serializes.
import { advanceRunsInTx } from '../server/workflows/apply.js';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { candidateReadSql, type CandidateSpec } from '../server/db/claim-sql.js';
import { withTransaction, type Pool } from '../server/db/pool.js';
import { cancelTask } from '../server/dispatch/task-commands.js';
import { newTenant } from './support/db.js';
import { call, ikey } from './support/http.js';
import { drainFrames, session, useRestartableGateway } from './support/keys-helpers.js';
import { lockKeysSql } from '../server/db/waiting-tasks.js';
import type { RawWorker } from './support/raw-worker.js';
import { defaultTaskBody, submitTask } from './support/submit.js';
import { sleep, waitFor } from './support/wait.js';
import { waitingHeadViolations } from './support/waiting.js';

const k = useRestartableGateway();

const KEYS = ['k1', 'k2', 'k3'];
const HANDLERS = [
  { handler: 'a', version: 'v1' },
  { handler: 'a', version: 'v2' },
  { handler: 'b', version: 'v1' },
];
/** Session handler filters (null: any), and the read's filters compared after each step. */
const FILTERS: CandidateSpec['handlers'][] = [
  null,
  [{ handler: 'a', versions: ['v2'] }],
  [
    { handler: 'a', versions: ['v1'] },
    { handler: 'b', versions: ['v1'] },
  ],
];

/** Ids of the rows `index`/`flag` read (the candidate read's statement, limit 1 000) for `spec`
 * at `now`, reduced to what a claim takes from them: every unkeyed row, and the first row of each
 * key. */
async function firstPerKey(c: PoolConnection, spec: CandidateSpec, now: string, index: string, flag: string): Promise<string[]> {
  const [sql, args] = candidateReadSql(spec, now, 0, index, flag);
  const [rows] = await c.query<RowDataPacket[]>(
    `SELECT c.id, w.concurrency_key FROM ${sql} c JOIN waiting_tasks w ON w.task_id = c.id ORDER BY c.priority DESC, c.seq`,
    args,
  );
  const seen = new Set<string>();
  const out: string[] = [];
  for (const r of rows) {
    const key = r.concurrency_key ? (r.concurrency_key as Buffer).toString('hex') : null;
    if (key !== null && seen.has(key)) continue;
    if (key !== null) seen.add(key);
    out.push(r.id as string);
  }
  return out;
}

/** In one snapshot: the flag invariant holds, and for each handler filter, now and two hours later
 * (rows with not_before due), keyed and unkeyed, the flagged read gives the claims the scan of
 * every row (PRIMARY, no flag: the statement before migration 000009) gives. */
async function checkSnapshot(t: CredentialsFile): Promise<void> {
  const c = await k.db.pool.getConnection();
  try {
    await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
    await c.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
    const violations = await waitingHeadViolations(c as unknown as Pool, t.namespace_id);
    expect(violations, 'waiting-heads invariant').toEqual([]);
    const [[clock]] = await c.query<RowDataPacket[]>(
      "SELECT DATE_FORMAT(UTC_TIMESTAMP(3), '%Y-%m-%d %H:%i:%s.%f') AS now, DATE_FORMAT(UTC_TIMESTAMP(3) + INTERVAL 2 HOUR, '%Y-%m-%d %H:%i:%s.%f') AS later",
    );
    for (const now of [clock!.now as string, clock!.later as string])
      for (const handlers of FILTERS)
        for (const keyed of [true, false]) {
          const spec: CandidateSpec = { queueId: t.queue_id, namespaceId: t.namespace_id, limit: 1000, handlers, keyed };
          const today = await firstPerKey(c, spec, now, 'PRIMARY', '');
          const flagged = await firstPerKey(c, spec, now, 'ix_waiting_claimable', 'AND w.claimable = 1 ');
          expect(flagged, `filter ${JSON.stringify(handlers)} keyed ${keyed} at ${now}`).toEqual(today);
        }
    await c.query('COMMIT');
  } finally {
    c.release();
  }
}

interface Item {
  key: number | null;
  priority: number;
  handler: number;
  delayed: boolean;
}

type Step =
  | { op: 'submit'; items: Item[] }
  | { op: 'open'; filter: number }
  | { op: 'finish'; worker: number; outcome: 'succeeded' | 'retry-now' | 'retry-later' }
  | { op: 'close'; worker: number }
  | { op: 'cancel'; pick: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('submit' as const),
      // One item: POST /v1/tasks; more: one POST /v1/tasks:batch (one INSERT … SELECT, flags
      // decided within the batch too: behindInBatch).
      items: fc.array(
        fc.record({
          key: fc.option(fc.integer({ min: 0, max: KEYS.length - 1 }), { freq: 5 }),
          priority: fc.integer({ min: 0, max: 3 }),
          handler: fc.integer({ min: 0, max: HANDLERS.length - 1 }),
          delayed: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
        }),
        { minLength: 1, maxLength: 6 },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('open' as const), filter: fc.integer({ min: 0, max: FILTERS.length - 1 }) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('finish' as const),
      worker: fc.nat(),
      outcome: fc.constantFrom('succeeded' as const, 'retry-now' as const, 'retry-later' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('close' as const), worker: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('cancel' as const), pick: fc.nat() }) },
);

/** Runs one step through the gateway. Assignments arrive when the gateway's claim rounds run:
 * `finish` completes one the worker already received, if any. */
async function runStep(t: CredentialsFile, workers: RawWorker[], s: Step): Promise<void> {
  switch (s.op) {
    case 'submit': {
      const bodies = s.items.map((i) => ({
        handler: HANDLERS[i.handler]!.handler,
        handler_version: HANDLERS[i.handler]!.version,
        priority: i.priority,
        ...(i.key === null ? {} : { concurrency_key: KEYS[i.key] }),
        ...(i.delayed ? { not_before: new Date(Date.now() + 3_600_000).toISOString() } : {}),
      }));
      if (bodies.length === 1) await submitTask(k.url(), t, bodies[0]);
      else {
        const tasks = bodies.map((b) => defaultTaskBody(t.queue_id, { ...b, idempotency_key: ikey('b') }));
        const r = await call(k.url(), 'POST', '/v1/tasks:batch', { token: t.token, body: { tasks } });
        expect(r.status, r.text).toBe(200);
        expect((r.body.data.results as { status: number }[]).map((x) => x.status)).toEqual(tasks.map(() => 201));
      }
      return;
    }
    case 'open': {
      const filter = FILTERS[s.filter];
      workers.push(await session(k.url(), t, { capacity: 1, ...(filter ? { handlers: filter } : {}) }));
      return;
    }
    case 'finish': {
      const w = workers[s.worker % Math.max(1, workers.length)];
      const assigned = w ? drainFrames(w, 'task.assign')[0] : undefined;
      if (!w || !assigned) return;
      w.send({ type: 'start', attempt_id: assigned.attempt_id });
      await w.next('start.ok');
      const result =
        s.outcome === 'succeeded'
          ? { outcome: 'succeeded' }
          : { outcome: 'retry', retry_after_ms: s.outcome === 'retry-now' ? 0 : 3_600_000, error: { code: 'E', message: 'again' } };
      w.send({ type: 'result', attempt_id: assigned.attempt_id, ...result });
      await w.next('result.ok');
      return;
    }
    case 'close': {
      const [w] = workers.splice(s.worker % Math.max(1, workers.length), 1);
      w?.close();
      return;
    }
    case 'cancel': {
      const [rows] = await k.db.pool.query<RowDataPacket[]>('SELECT task_id FROM waiting_tasks WHERE namespace_id = ? ORDER BY seq', [t.namespace_id]);
      const id = rows.length ? (rows[s.pick % rows.length]!.task_id as string) : null;
      if (id) await call(k.url(), 'POST', `/v1/tasks/${id}:cancel`, { token: t.token, key: ikey('cancel'), body: {} });
      return;
    }
  }
}

describe('waiting heads: the flagged candidate read', () => {
  it('claims what the scan of every row claims, and keeps every group head flagged, over random steps', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 8, maxLength: 24 }), async (steps) => {
        const t = await newTenant(k.db);
        const workers: RawWorker[] = [];
        try {
          for (const s of steps) {
            await runStep(t, workers, s);
            await checkSnapshot(t);
          }
        } finally {
          for (const w of workers) w.close();
        }
      }),
      { numRuns: 12 },
    );
  }, 300_000);
});

describe('waiting heads: a submit batch', () => {
  it('flags the first row of each group in the batch only, by priority then order', async () => {
    const t = await newTenant(k.db);
    const body = (key: string, priority: number, handler_version = 'v1') =>
      defaultTaskBody(t.queue_id, { concurrency_key: key, priority, handler_version, idempotency_key: ikey('b') });
    const tasks = [body('b/1', 0), body('b/1', 0), body('b/1', 0, 'v2'), body('b/2', 0), body('b/2', 5), body('b/2', 5)];
    const r = await call(k.url(), 'POST', '/v1/tasks:batch', { token: t.token, body: { tasks } });
    expect(r.status, r.text).toBe(200);
    const ids = (r.body.data.results as { data: { task: { id: string } } }[]).map((x) => x.data.task.id);
    const [rows] = await k.db.pool.query<RowDataPacket[]>('SELECT task_id, claimable FROM waiting_tasks WHERE namespace_id = ?', [t.namespace_id]);
    const flag = new Map(rows.map((x) => [x.task_id as string, Number(x.claimable)]));
    // b/1 v1: the first; b/1 v2: a group of its own; b/2: the first priority-5 task.
    expect(ids.map((id) => flag.get(id))).toEqual([1, 0, 1, 0, 1, 0]);
  });
});

/** Three waiting tasks of one group on key `key` (priority 0, oldest first), submitted over HTTP. */
async function group(t: CredentialsFile, key: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await submitTask(k.url(), t, { concurrency_key: key })).id);
  return ids;
}

/** Runs `fn` in a transaction (the real cancel of `taskId`, with its ledger flushed) and keeps it
 * open until `release` resolves; the statements of `fn` are all sent before `held` resolves. */
function holdCancel(pool: Pool, t: CredentialsFile, taskId: string): { held: Promise<void>; commit: () => void; done: Promise<unknown> } {
  let commit!: () => void;
  const release = new Promise<void>((r) => (commit = r));
  let held!: () => void;
  const heldP = new Promise<void>((r) => (held = r));
  const done = withTransaction(pool, 'command', async (c) => {
    await cancelTask(c, advanceRunsInTx, t.namespace_id, taskId, 'race');
    await c.query('SELECT 1'); // the queued waiting writes are sent before this
    held();
    await release;
  });
  return { held: heldP, commit, done };
}

describe('waiting heads: writers of one group are serialized by the key row', () => {
  it("two cancels of a group's first two rows at once: the third row is flagged", async () => {
    const t = await newTenant(k.db);
    const [first, second, third] = await group(t, 'race/two-deletes');
    // The second row's delete is held uncommitted while the first (the head) is cancelled. The key
    // lock makes the head's cancel wait for it. (Measured: this one also passes without the key
    // lock — the flag UPDATE's derived read is a locking read in a multi-table UPDATE, so it waits
    // on the deleted second row and then reads past it; the insert below has no such lock.)
    const h = holdCancel(k.db.pool, t, second!);
    await h.held;
    const other = call(k.url(), 'POST', `/v1/tasks/${first}:cancel`, { token: t.token, key: ikey('cancel'), body: {} });
    await sleep(300); // gives the other cancel time to reach the key lock (not asserted)
    h.commit();
    await h.done;
    expect((await other).status).toBe(200);
    const [rows] = await k.db.pool.query<RowDataPacket[]>('SELECT task_id, claimable FROM waiting_tasks WHERE namespace_id = ?', [t.namespace_id]);
    expect(rows.map((r) => ({ ...r }))).toEqual([{ task_id: third, claimable: 1 }]);
    expect(await waitingHeadViolations(k.db.pool)).toEqual([]);
  });

  it("a submit racing the cancel of its group's head: the new row is flagged", async () => {
    const t = await newTenant(k.db);
    const head = (await submitTask(k.url(), t, { concurrency_key: 'race/insert' })).id;
    // The head's delete is held uncommitted; without the key lock the submit would see the head
    // (not yet deleted for it), insert its row unflagged, and the head's cancel would not see it.
    const h = holdCancel(k.db.pool, t, head);
    await h.held;
    const submitted = submitTask(k.url(), t, { concurrency_key: 'race/insert' });
    await sleep(300); // gives the submit time to reach the key lock (not asserted)
    h.commit();
    await h.done;
    const task = await submitted;
    const [rows] = await k.db.pool.query<RowDataPacket[]>('SELECT task_id, claimable FROM waiting_tasks WHERE namespace_id = ?', [t.namespace_id]);
    expect(rows.map((r) => ({ ...r }))).toEqual([{ task_id: task.id, claimable: 1 }]);
    expect(await waitingHeadViolations(k.db.pool)).toEqual([]);
  });
});

/** InnoDB's count of deadlocks it resolved (rolling a transaction back) since the server started. */
async function deadlocks(pool: Pool): Promise<number> {
  const [[r]] = await pool.query<RowDataPacket[]>("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'");
  return Number(r!.Value);
}

describe("waiting heads: a cancel and the key holder's retry at once", () => {
  it("the cancel of a key's waiting row does not deadlock with the result retrying the key's holder", async () => {
    const t = await newTenant(k.db);
    const w = await session(k.url(), t, { capacity: 1 });
    try {
      const holder = (await submitTask(k.url(), t, { concurrency_key: 'race/retry' })).id;
      const assign = await w.next('task.assign');
      expect(assign.task.id).toBe(holder);
      w.send({ type: 'start', attempt_id: assign.attempt_id });
      await w.next('start.ok');
      const waiting = (await submitTask(k.url(), t, { concurrency_key: 'race/retry' })).id;
      const before = await deadlocks(k.db.pool);
      // The cancel of the waiting task as the ledger runs it, with its key row lock taken first and
      // held (the interleaving where the retry's statements land between the cancel's key upsert
      // and its delete and flag UPDATE); then the real cancel (the upsert again, the delete, the
      // flag UPDATE's locking read of the group on ix_waiting_key).
      let runs = 0;
      let keyHeld!: () => void;
      const held = new Promise<void>((r) => (keyHeld = r));
      let proceed!: () => void;
      const go = new Promise<void>((r) => (proceed = r));
      const cancel = withTransaction(k.db.pool, 'command', async (c) => {
        runs++;
        await c.query('SELECT id FROM tasks WHERE id = ? FOR UPDATE', [waiting]);
        await c.query(...lockKeysSql([{ namespace_id: t.namespace_id, concurrency_key: Buffer.from('race/retry') }])!);
        keyHeld();
        await go;
        await cancelTask(c, advanceRunsInTx, t.namespace_id, waiting, 'race');
        await c.query('SELECT 1'); // the queued waiting writes are sent before this
      });
      await held;
      // The holder's result: retry with a backoff (its waiting row has a not_before). Its frame
      // transaction waits for the key row the cancel holds (the release).
      w.send({ type: 'result', attempt_id: assign.attempt_id, outcome: 'retry', retry_after_ms: 3_600_000, error: { code: 'E', message: 'again' } });
      // (Its wait shows in the process list, not in INNODB_TRX: MariaDB reads a row looked up by
      // primary key while planning, so the statement waits in state "Statistics".)
      try {
        await waitFor('the result waiting for the key row', async () => {
          const [rows] = await k.db.pool.query<RowDataPacket[]>(
            "SELECT 1 FROM information_schema.PROCESSLIST WHERE id <> CONNECTION_ID() AND command = 'Query' AND info LIKE '%resource_keys%'",
          );
          return rows.length > 0;
        });
      } finally {
        proceed();
      }
      await cancel;
      expect((await w.next('result.ok')).task_state).toBe('WAITING');
      // Neither transaction was rolled back: the cancel ran once, InnoDB resolved no deadlock.
      expect({ runs, deadlocks: (await deadlocks(k.db.pool)) - before }).toEqual({ runs: 1, deadlocks: 0 });
      const [rows] = await k.db.pool.query<RowDataPacket[]>(
        'SELECT task_id, claimable, not_before IS NOT NULL AS backoff FROM waiting_tasks WHERE namespace_id = ?',
        [t.namespace_id],
      );
      expect(rows.map((r) => ({ ...r }))).toEqual([{ task_id: holder, claimable: 1, backoff: 1 }]);
      expect(await waitingHeadViolations(k.db.pool)).toEqual([]);
    } finally {
      w.close();
    }
  });
});
