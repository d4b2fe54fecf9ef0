// The one task-creation path: POST /v1/tasks, every item of POST /v1/tasks:batch and schedule
// fires create tasks here, with the same checks, quota, receipts and wake-ups.
//
// Commands of one application that arrive together share one transaction of batch-shaped
// statements, whatever their number (measured per batch, not per task), in two round trips:
//   1. (with START TRANSACTION) the named queues with the database clock (no lock), whether the
//      credentials of the commands authenticated from the node's credential cache are live
//      (server/http/auth.ts), and the committed receipts of the batch's keys (replays and
//      conflicts answered from them),
//   2. one multi-row INSERT of tasks and one of complete receipts (the frozen replies), then the
//      hot rows — the queues (a checked touch refused on a retired queue) and the application's
//      unfinished-task counter (a checked increment refused past the quota) — and the COMMIT, so
//      they are locked only while the server runs that text (db/conditional-commit.ts).
// At the edge — a queue retired or the quota reached in step 2, a key that another transaction is
// inserting — the transaction rolls back and each item runs alone, under its key's named lock,
// with the same statements; there the refusal is the item's exact answer (409 RESOURCE_RETIRED or
// 429 QUOTA_EXCEEDED: the refusal names its check), or the other command's receipt. Quota is never
// exceeded by one task, and a submit and a retirement never both succeed.
//
// Schedules and workflows create their tasks with the same statements inside their own
// transactions (createTasksInTransaction, createStepTasksInTransaction: the checks without our
// COMMIT, applyChecked): a fire has no Idempotency-Key (its fire record, unique per (schedule,
// fire time), is its identity), so no receipt is written for it.
import { OrbitError } from '@orbit/protocol/errors';
import type { Task } from '@orbit/protocol/http-views';
import type { Logger } from 'pino';
import type { Credential } from '../db/credentials.js';
import { isDuplicateKey } from '../db/errors.js';
import { fromIso, isDatabaseRefusal, withTransaction, type Tx, type Pool } from '../db/pool.js';
import { poolBudget } from '../db/packet-budget.js';
import type { Metrics } from '../metrics.js';
import type { WorkSignals } from '../work-signals.js';
import type { RowDataPacket } from 'mysql2/promise';
import { insertReceipts, receiptsRead, type NewReceipt, type ReceiptKeyRow, type ReceiptRow } from '../db/receipts.js';
import { liveQueuesTouch, submitQueuesOf, submitQueuesRead, type SubmitQueueRow, type SubmitQueues } from '../db/queues.js';
import { queryAll } from '../db/pipeline.js';
import { unfinishedTasksReservation } from '../db/applications.js';
import { applyChecked, commitIfApplied, NotApplied } from '../db/conditional-commit.js';
import { insertTasks, insertedTaskRow, taskView, type NewTask, type TaskOrigin } from '../db/tasks.js';
import { insertStepTasks, type NewStepTask as NewStepTaskRow } from '../db/workflow-step-tasks.js';
import { newId } from '../ids.js';
import { coalesce, type Coalesced } from './coalesce.js';
import { ALONE, commandFingerprint, executeIdempotent, replayReceipt, runAlone } from './idempotency.js';
import { queueNotFound, unfinishedTasksQuota } from './refusals.js';
import type { PreparedSubmit } from './submit-input.js';
import { dbTimeToMs } from '../db/time.js';

export const SUBMIT_OPERATION = 'POST /v1/tasks';

/** What task creation needs of the node (a slice of AppContext; this module does not import it,
 * since AppContext names the TaskSubmitter). */
export interface SubmitDeps {
  pool: Pool;
  metrics: Metrics;
  log: Logger;
  signals: Pick<WorkSignals, 'wake'>;
}

/** One submit command: who sends it, its Idempotency-Key and its normalized content. */
export interface SubmitCommand {
  credential: Pick<Credential, 'id' | 'namespaceId' | 'applicationId' | 'queueIds'>;
  /** null: no receipt (a schedule's task: the fire record or the trigger's receipt is its identity). */
  key: string | null;
  /** The credential came from the node's credential cache (server/http/auth.ts), not from a lookup
   * by this request: the transaction checks that it is still live (not revoked) before anything
   * else and answers 401 UNAUTHENTICATED if not, as that lookup would have. */
  checkCredential?: boolean;
  prepared: PreparedSubmit;
  /** Tasks created by a schedule record it. */
  origin?: TaskOrigin;
  /** A workflow step's task (server/workflows/apply.ts): its run, step and for_each index (null
   * without for_each), and its delay: not_before = the database clock + delay. A
   * workflow_step_tasks row is written with it, whose primary key refuses a second task per
   * (run, step, index). */
  workflow?: { runId: string; step: string; index: number | null; delaySeconds: number };
}

/** `json`: `data` as JSON, when it was serialized already — a first execution's reply is its
 * receipt's frozen text, so the HTTP reply sends that text instead of serializing `data` again. */
export type SubmitOutcome = { ok: true; status: 201 | 200; data: { task: Task; deduplicated: boolean }; json?: string } | { ok: false; error: OrbitError };

/** Rolls the batch back; its items then run one by one. */
class EdgeOfBatch extends Error {}

/** ALONE: run by itself after the batch; 'not-found': its refusal (with a hint) is built after. */
type Slot = SubmitOutcome | typeof ALONE | 'not-found';

interface TxResult {
  outcomes: Slot[];
  /** Queues that got new tasks (dispatchers are woken for them after commit). */
  queues: Set<string>;
  accepted: number;
}

function refused(code: ConstructorParameters<typeof OrbitError>[0], message: string, field?: string): SubmitOutcome {
  return { ok: false, error: new OrbitError(code, message, field ? { field } : undefined) };
}

/** The batch's first round trip (after START TRANSACTION): its queues with the database clock and
 * its cached credentials (submitQueuesRead), and the committed receipts of its keys (receiptsRead,
 * replays and conflicts answered from them) — two reads that do not depend on each other, so one
 * round trip, not two (issue 19: a submit transaction is 2 round trips, the other its COMMIT). The
 * receipts of every keyed item are read, also those that turn out refused (their receipt is then
 * not used: authorization comes first). */
async function readBatch(c: Tx, items: SubmitCommand[]): Promise<SubmitQueues & { receipts: Map<string, ReceiptRow> }> {
  const keys = items.flatMap((i): [string, string][] => (i.key === null ? [] : [[i.credential.namespaceId, i.key]]));
  const queuesRead = submitQueuesRead(
    items.map((i) => i.prepared.normalized.queue_id),
    items.filter((i) => i.checkCredential).map((i) => i.credential.id),
  );
  const reads: [string, unknown[]][] = [];
  if (queuesRead) reads.push(queuesRead);
  if (keys.length > 0) reads.push(receiptsRead(keys));
  const results = reads.length > 0 ? (await queryAll(c, reads)).map(([r]) => r as RowDataPacket[]) : [];
  const read = await submitQueuesOf(c, queuesRead ? results[0] : undefined);
  const receipts = new Map<string, ReceiptRow>();
  for (const r of (keys.length > 0 ? results[results.length - 1]! : []) as ReceiptKeyRow[]) receipts.set(`${r.namespace_id}\n${r.idempotency_key}`, r);
  return { ...read, receipts };
}

/** The statements of one transaction for `items` (one application). `alone`: the edge conditions
 * are the items' answer (an item alone under its key lock, or a caller's transaction, which gets
 * them thrown for the whole batch). `commit`: the transaction is the submitter's (a batch or an
 * item alone), committed here with its hot rows; a caller's transaction goes on after the tasks. */
async function createTasksInTx(c: Tx, items: SubmitCommand[], alone: boolean, commit = false): Promise<TxResult> {
  const outcomes: Slot[] = new Array(items.length);
  const { rows, now, liveCredentials, receipts: stored } = await readBatch(c, items);
  const queues = new Map<string, SubmitQueueRow>(rows.map((q) => [q.id, q]));
  const nowMs = dbTimeToMs(now);
  const createdAt = now.length === 19 ? `${now}.000` : now;

  // Existence and authorization first: a replay never hands a task of a queue outside queue_ids
  // to a limited credential (404 when the queue is not in the namespace at all).
  const fingerprints: string[] = [];
  const live: number[] = [];
  items.forEach((it, i) => {
    if (it.checkCredential && !liveCredentials.has(it.credential.id)) return (outcomes[i] = refused('UNAUTHENTICATED', 'unknown or revoked credential'));
    const n = it.prepared.normalized;
    const q = queues.get(n.queue_id);
    if (!q || q.namespace_id !== it.credential.namespaceId) return (outcomes[i] = 'not-found');
    if (it.credential.queueIds !== '*' && !it.credential.queueIds.includes(q.id)) {
      return (outcomes[i] = refused('PERMISSION_DENIED', "queue is outside the credential's queue_ids", 'queue_id'));
    }
    // max_attempts defaults to the queue's before fingerprinting, so that writing the default
    // out is the same command as omitting it.
    const normalized = { ...n, max_attempts: n.max_attempts ?? q.retry_max_attempts };
    if (it.key !== null) fingerprints[i] = commandFingerprint(SUBMIT_OPERATION, '', normalized);
    live.push(i);
  });

  const keysInBatch = new Set<string>();
  const tasks: (NewTask & { createdAt: string; deadlineAt: string })[] = [];
  const receipts: NewReceipt[] = [];
  const byQueue = new Set<string>();
  for (const i of live) {
    const it = items[i]!;
    const n = it.prepared.normalized;
    const q = queues.get(n.queue_id)!;
    const k = it.key === null ? null : `${it.credential.namespaceId}\n${it.key}`;
    const prior = k === null ? undefined : stored.get(k);
    if (prior && prior.http_status !== 0) {
      try {
        const r = replayReceipt(prior, SUBMIT_OPERATION, '', fingerprints[i]!);
        outcomes[i] = { ok: true, status: 200, data: r.data as { task: Task; deduplicated: boolean } };
      } catch (err) {
        outcomes[i] = { ok: false, error: err as OrbitError };
      }
      continue;
    }
    // A second item with the same key: behaves as a concurrent submit, answered after this one.
    if (k !== null && keysInBatch.has(k)) {
      outcomes[i] = ALONE;
      continue;
    }
    if (q.retired_at) {
      outcomes[i] = refused('RESOURCE_RETIRED', 'queue is retired', 'queue_id');
      continue;
    }
    const { notBeforeMs } = it.prepared;
    if (notBeforeMs !== undefined && notBeforeMs > nowMs + n.deadline_seconds * 1000) {
      outcomes[i] = refused('INVALID_ARGUMENT', 'not_before: must not be after the deadline', 'not_before');
      continue;
    }
    if (k !== null) keysInBatch.add(k);
    const t = {
      id: newId(),
      namespaceId: it.credential.namespaceId,
      applicationId: it.credential.applicationId,
      queueId: q.id,
      handler: n.handler,
      handlerVersion: n.handler_version,
      payloadVersion: n.payload_version,
      payloadJson: it.prepared.payloadJson,
      businessKey: n.business_key ?? null,
      concurrencyKey: n.concurrency_key === undefined ? null : Buffer.from(n.concurrency_key, 'utf8'),
      priority: n.priority,
      maxAttempts: n.max_attempts ?? q.retry_max_attempts,
      notBefore: n.not_before === undefined ? null : fromIso(n.not_before),
      createdAt,
      deadlineAt: fromIso(new Date(nowMs + n.deadline_seconds * 1000).toISOString())!,
      origin: it.origin,
      workflow: it.workflow && { runId: it.workflow.runId, step: it.workflow.step, index: it.workflow.index },
    };
    if (it.workflow && it.workflow.delaySeconds > 0) t.notBefore = fromIso(new Date(nowMs + it.workflow.delaySeconds * 1000).toISOString());
    const data = { task: taskView(insertedTaskRow(t)), deduplicated: false };
    const json = it.key === null ? undefined : JSON.stringify(data);
    tasks.push(t);
    if (it.key !== null)
      receipts.push({
        namespaceId: t.namespaceId,
        key: it.key,
        operation: SUBMIT_OPERATION,
        targetId: '',
        fingerprint: fingerprints[i]!,
        httpStatus: 201,
        json: json!,
        resourceId: t.id,
        credentialId: it.credential.id,
        createdAt,
      });
    byQueue.add(q.id);
    outcomes[i] = { ok: true, status: 201, data, json };
  }
  // A queue_id that names no queue: the refusal says so, and names the id when a queue *name* was
  // given (rare: the extra lookup is paid by refused items only).
  for (let i = 0; i < items.length; i++) {
    if (outcomes[i] === 'not-found')
      outcomes[i] = { ok: false, error: await queueNotFound(c, items[i]!.credential.namespaceId, items[i]!.prepared.normalized.queue_id) };
  }
  if (tasks.length === 0) return { outcomes, queues: byQueue, accepted: 0 };

  await insertTasks(c, tasks);
  if (items.some((it) => it.workflow)) await insertStepTasks(c, stepTaskRows(tasks));
  await insertReceipts(c, receipts);
  // The hot rows, last and in the ledger's lock order: queues (by id), then the application, as
  // checked updates (db/conditional-commit.ts), both in one round trip. The submitter's own
  // transaction (a batch, an item alone) sends them with its COMMIT: the rows every submit and
  // claim of the application waits for stay locked only while the server runs that text. A
  // caller's transaction (schedules, workflows) goes on after them, so they go without it.
  const app = items[0]!.credential.applicationId;
  const touch = liveQueuesTouch([...byQueue]);
  try {
    await (commit ? commitIfApplied : applyChecked)(c, [touch, unfinishedTasksReservation(app, tasks.length)]);
  } catch (err) {
    if (!(err instanceof NotApplied)) throw err;
    // At the batch's edge its items run alone; alone, the refusal is the item's answer: which
    // check refused is in the refusal itself (a retired queue, else the quota), so only the
    // quota's 429 reads anything (its limit), on refusals only.
    if (!alone) throw new EdgeOfBatch();
    if (err.refused(touch)) throw new OrbitError('RESOURCE_RETIRED', 'queue is retired', { field: 'queue_id' });
    throw await unfinishedTasksQuota(c, app);
  }
  return { outcomes, queues: byQueue, accepted: tasks.length };
}

/** Tasks created inside a caller's transaction (schedule fires and triggers), with the same
 * statements as a submit. The edge conditions of the batch are thrown for the whole batch:
 * OrbitError RESOURCE_RETIRED (a queue is retired) or QUOTA_EXCEEDED (the application's
 * unfinished-task quota would be passed); the caller rolls back (to a savepoint) and decides.
 * Call `afterCommit` once the caller's transaction committed (metrics, dispatcher wake-ups). */
export async function createTasksInTransaction(
  app: Omit<SubmitDeps, 'pool'>,
  c: Tx,
  items: SubmitCommand[],
): Promise<{ outcomes: SubmitOutcome[]; afterCommit: () => void }> {
  const r = await createTasksInTx(c, items, true);
  return {
    outcomes: r.outcomes.map((o) => (o === ALONE ? refused('INTERNAL', 'duplicate key in one creation') : (o as SubmitOutcome))),
    afterCommit: () => afterCommitOf(app, r),
  };
}

/** The workflow_step_tasks rows of the step tasks among `tasks`. */
function stepTaskRows(tasks: (NewTask & { createdAt: string })[]): NewStepTaskRow[] {
  return tasks
    .filter((t) => t.workflow)
    .map((t) => ({
      runId: t.workflow!.runId,
      stepKey: t.workflow!.step,
      index: t.workflow!.index ?? 0,
      namespaceId: t.namespaceId,
      applicationId: t.applicationId,
      taskId: t.id,
      createdAt: t.createdAt,
    }));
}

/** A workflow step's tasks, inside the advancing transaction (server/workflows/apply.ts), with the
 * statements of a submit. Throws OrbitError QUOTA_EXCEEDED or RESOURCE_RETIRED for the whole
 * batch (the caller rolls back to its savepoint and plans again); a second task for a (run, step,
 * index) fails with a duplicate key. Returns the created tasks' queues (woken after the commit). */
export async function createStepTasksInTransaction(c: Tx, items: SubmitCommand[]): Promise<{ outcomes: SubmitOutcome[]; queues: string[] }> {
  const r = await createTasksInTx(c, items, true);
  return { outcomes: r.outcomes as SubmitOutcome[], queues: [...r.queues] };
}

function afterCommitOf(app: Omit<SubmitDeps, 'pool'>, r: TxResult): void {
  if (r.accepted > 0) {
    app.metrics.tasksAccepted.inc(r.accepted);
    if (app.log.isLevelEnabled('debug')) {
      for (const o of r.outcomes)
        if (typeof o === 'object' && o.ok && o.status === 201) app.log.debug({ task_id: o.data.task.id, queue_id: o.data.task.queue_id }, 'task accepted');
    }
  }
  app.signals.wake(r.queues);
}

/** The node's task-creation path. */
export class TaskSubmitter {
  private readonly committer: Coalesced<SubmitCommand, SubmitOutcome>;

  constructor(private readonly app: SubmitDeps) {
    // 500 items: one full POST /v1/tasks:batch fits one transaction (unless its payloads exceed
    // one packet's worth: the weight). One batch per application in flight while fewer than 100
    // items wait: every batch of an application updates its queue rows and its unfinished-task
    // counter with its COMMIT, so a second small one in flight does not commit sooner, it only
    // splits the requests that would have shared a transaction. Measured on `unkeyed` (32
    // concurrent one-task requests, one application; docs/benchmarks.md "Requests per submit
    // transaction", session 30): 14.3–14.9 requests per transaction against 7.8–8.1 with two in
    // flight, 2.9–3.1 statements per task against 3.4–3.8, CPU per task −11 % on the means of 4
    // alternated runs, no p99 cost seen. From 100 waiting items (batch requests) a second batch
    // runs beside the first as before: one at a time there saved no statement (2.35 per task on
    // `unkeyed-batch` either way) and raised the producers' p50 response time 1.3–1.8× (the gateway's
    // building of one batch no longer overlapped the database's work on the other). Two
    // applications still commit side by side (maxParallel).
    this.committer = coalesce((_group, items) => this.runBatch(items), {
      maxBatch: 500,
      maxParallel: 2,
      maxPerGroup: 1,
      overlapFrom: 100,
      weight: { of: (cmd) => Buffer.byteLength(cmd.prepared.payloadJson), max: () => poolBudget(app.pool).bytes },
    });
  }

  /** Submits one command; resolves with its outcome (a refusal is an outcome, not a throw). A
   * database failure rejects (the caller answers 503: retry with the same key). */
  submit(cmd: SubmitCommand): Promise<SubmitOutcome> {
    return this.committer(cmd.credential.applicationId, cmd);
  }

  /** Commands of one request (one credential, so one application), queued together. */
  submitMany(cmds: SubmitCommand[]): Promise<SubmitOutcome>[] {
    if (cmds.length === 0) return [];
    return this.committer.all(cmds[0]!.credential.applicationId, cmds);
  }

  private afterCommit(r: TxResult): void {
    afterCommitOf(this.app, r);
  }

  /** The batched fast path, then each item it could not answer alone (dispatch/idempotency.ts). */
  private runBatch(items: SubmitCommand[]): Promise<SubmitOutcome[]> {
    return executeIdempotent(
      items,
      async (batch) => {
        const started = process.hrtime.bigint();
        const r = await withTransaction(this.app.pool, 'submit', (c) => createTasksInTx(c, batch, false, true));
        this.app.metrics.commitSeconds.observe({ op: SUBMIT_OPERATION }, Number(process.hrtime.bigint() - started) / 1e9);
        this.afterCommit(r);
        return r.outcomes as (SubmitOutcome | typeof ALONE)[];
      },
      // At the edge: every item alone, in order (quota is then granted in arrival order).
      (err) => err instanceof EdgeOfBatch || isDuplicateKey(err),
      (it) => this.alone(it),
    );
  }

  /** One command in its own transaction, under its key's named lock. */
  private async alone(it: SubmitCommand): Promise<SubmitOutcome> {
    try {
      // Commands through the submitter always carry a key (keyless ones are schedules' tasks,
      // created inside their own transactions). The transaction reads the key's receipt itself; a
      // batch on another node inserts receipts without the named lock, so its key may commit while
      // this waits on the row (a duplicate key), and the next round replays it.
      const r = await runAlone(this.app.pool, it.credential.namespaceId, it.key ?? '', {
        path: 'submit',
        tx: (c) => createTasksInTx(c, [it], true, true),
        taken: isDuplicateKey,
      });
      this.afterCommit(r);
      return r.outcomes[0] as SubmitOutcome;
    } catch (err) {
      if (err instanceof OrbitError) return { ok: false, error: err };
      // This item's own failure is its answer; it never fails the other items of its group (some
      // of which may have committed already). Its transaction rolled back: nothing of it remains.
      if (isDatabaseRefusal(err)) {
        return { ok: false, error: new OrbitError('UNAVAILABLE', 'database busy or unavailable; retry with the same Idempotency-Key') };
      }
      this.app.log.error({ err, idempotency_key: it.key }, 'submit failed');
      return { ok: false, error: new OrbitError('INTERNAL', 'internal error; the command was not accepted') };
    }
  }
}
