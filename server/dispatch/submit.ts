// The one task-creation path (submits, batch items, schedule fires, workflow steps). Commands of one
// application that arrive together share one transaction in two round trips: the reads, then the
// INSERTs with the hot rows (checked) and the COMMIT. At the edge (retired queue, quota, a key in
// flight elsewhere) the batch rolls back and each item runs alone under its key's named lock, where
// the refusal is exact.
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
import { insertTasks, taskView, type TaskFields } from '../db/tasks.js';
import { insertStepTasks } from '../db/workflow-step-tasks.js';
import { newId } from '../ids.js';
import { coalesce, type Coalesced } from './coalesce.js';
import { ALONE, commandFingerprint, executeIdempotent, replayReceipt, runAlone } from './idempotency.js';
import { queueNotFound, unfinishedTasksQuota } from './refusals.js';
import type { PreparedSubmit } from './submit-input.js';
import { dbTimeToMs } from '../db/time.js';
import { JsonText } from '../db/sql-format.js';

export const SUBMIT_OPERATION = 'POST /v1/tasks';

/** Not AppContext itself, which names the TaskSubmitter. */
export interface SubmitDeps {
  pool: Pool;
  metrics: Metrics;
  log: Logger;
  signals: Pick<WorkSignals, 'wake'>;
}

export interface SubmitCommand {
  credential: Pick<Credential, 'id' | 'namespaceId' | 'applicationId' | 'queueIds'>;
  /** null: no receipt; a schedule's task has its fire record as identity. */
  key: string | null;
  /** From the node's cache: the transaction checks that it is still live. */
  checkCredential?: boolean;
  prepared: PreparedSubmit;
  /** A schedule's task: its fire. */
  origin?: { scheduleId: string; scheduleVersion: number; scheduledFor: string };
  /** A workflow step's task: not_before = the database clock + delay. */
  workflow?: { runId: string; step: string; index: number | null; delaySeconds: number };
}

/** `json`: the receipt's frozen text of `data`, sent as the HTTP reply as it is. */
export type SubmitOutcome = { ok: true; status: 201 | 200; data: { task: Task; deduplicated: boolean }; json?: string } | { ok: false; error: OrbitError };

class EdgeOfBatch extends Error {}

/** ALONE: run by itself after the batch; 'not-found': its refusal is built after. */
type Slot = SubmitOutcome | typeof ALONE | 'not-found';

interface TxResult {
  outcomes: Slot[];
  queues: Set<string>;
  accepted: number;
}

function refused(code: ConstructorParameters<typeof OrbitError>[0], message: string, field?: string): SubmitOutcome {
  return { ok: false, error: new OrbitError(code, message, field ? { field } : undefined) };
}

/** The batch's first round trip: its queues with the clock and cached credentials, and the
 * committed receipts of its keys. */
async function readBatch(c: Tx, items: SubmitCommand[]): Promise<SubmitQueues & { receipts: Map<string, ReceiptRow> }> {
  const keys = items.flatMap((i): [string, string][] => (i.key === null ? [] : [[i.credential.namespaceId, i.key]]));
  const queueIds = items.map((i) => i.prepared.normalized.queue_id);
  const checked = items.filter((i) => i.checkCredential).map((i) => i.credential.id);
  const queuesRead = submitQueuesRead(queueIds, checked);
  const reads: [string, unknown[]][] = [];
  if (queuesRead) reads.push(queuesRead);
  if (keys.length > 0) reads.push(receiptsRead(keys));
  const results = reads.length > 0 ? (await queryAll(c, reads)).map(([r]) => r as RowDataPacket[]) : [];
  const read = await submitQueuesOf(c, queuesRead ? results[0] : undefined);
  const receipts = new Map<string, ReceiptRow>();
  for (const r of (keys.length > 0 ? results[results.length - 1]! : []) as ReceiptKeyRow[]) receipts.set(`${r.namespace_id}\n${r.idempotency_key}`, r);
  return { ...read, receipts };
}

/** One transaction's statements for `items` of one application. `alone`: the edge conditions are
 * the items' answer. `commit`: the transaction is the submitter's and commits here. */
async function createTasksInTx(c: Tx, items: SubmitCommand[], alone: boolean, commit = false): Promise<TxResult> {
  const outcomes: Slot[] = new Array(items.length);
  const { rows, now, liveCredentials, receipts: stored } = await readBatch(c, items);
  const queues = new Map<string, SubmitQueueRow>(rows.map((q) => [q.id, q]));
  const nowMs = dbTimeToMs(now);
  const createdAt = now.length === 19 ? `${now}.000` : now;

  // Authorization first, so a replay never hands a limited credential a task outside its queues.
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
    // Default max_attempts before fingerprinting, so writing the default out equals omitting it.
    const normalized = { ...n, max_attempts: n.max_attempts ?? q.retry_max_attempts };
    if (it.key !== null) fingerprints[i] = commandFingerprint(SUBMIT_OPERATION, '', normalized);
    live.push(i);
  });

  const keysInBatch = new Set<string>();
  const tasks: TaskFields[] = [];
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
    const at = (seconds: number) => fromIso(new Date(nowMs + seconds * 1000).toISOString())!;
    const row: TaskFields = {
      id: newId(),
      namespace_id: it.credential.namespaceId,
      application_id: it.credential.applicationId,
      queue_id: q.id,
      seq: '0',
      handler: n.handler,
      handler_version: n.handler_version,
      payload_version: n.payload_version,
      payload: it.prepared.payloadJson,
      business_key: n.business_key ?? null,
      concurrency_key: n.concurrency_key === undefined ? null : Buffer.from(n.concurrency_key, 'utf8'),
      priority: n.priority,
      state: 'WAITING',
      attempts_made: 0,
      attempts_created: 0,
      max_attempts: n.max_attempts ?? q.retry_max_attempts,
      not_before: it.workflow && it.workflow.delaySeconds > 0 ? at(it.workflow.delaySeconds) : n.not_before === undefined ? null : fromIso(n.not_before),
      deadline_at: at(n.deadline_seconds),
      created_at: createdAt,
      updated_at: createdAt,
      finished_at: null,
      current_attempt_id: null,
      result_outcome: null,
      result_output: null,
      result_error_code: null,
      result_error_message: null,
      schedule_id: it.origin?.scheduleId ?? null,
      schedule_version: it.origin?.scheduleVersion ?? null,
      scheduled_for: it.origin?.scheduledFor ?? null,
      workflow_run_id: it.workflow?.runId ?? null,
      workflow_step: it.workflow?.step ?? null,
      workflow_index: it.workflow?.index ?? null,
    };
    const data = { task: taskView(row), deduplicated: false };
    const json = it.key === null ? undefined : JSON.stringify(data);
    tasks.push(row);
    if (it.key !== null)
      receipts.push({
        namespace_id: row.namespace_id,
        idempotency_key: it.key,
        operation: SUBMIT_OPERATION,
        target_id: '',
        fingerprint: fingerprints[i]!,
        http_status: 201,
        response_data: new JsonText(json!),
        resource_id: row.id,
        credential_id: it.credential.id,
        created_at: createdAt,
      });
    byQueue.add(q.id);
    outcomes[i] = { ok: true, status: 201, data, json };
  }
  for (let i = 0; i < items.length; i++) {
    if (outcomes[i] === 'not-found')
      outcomes[i] = { ok: false, error: await queueNotFound(c, items[i]!.credential.namespaceId, items[i]!.prepared.normalized.queue_id) };
  }
  if (tasks.length === 0) return { outcomes, queues: byQueue, accepted: 0 };

  await insertTasks(c, tasks);
  await insertStepTasks(c, tasks);
  await insertReceipts(c, receipts);
  // The hot rows last, in the ledger's lock order: queues by id, then the application.
  const app = items[0]!.credential.applicationId;
  const touch = liveQueuesTouch([...byQueue]);
  try {
    await (commit ? commitIfApplied : applyChecked)(c, [touch, unfinishedTasksReservation(app, tasks.length)]);
  } catch (err) {
    if (!(err instanceof NotApplied)) throw err;
    // Alone, the refusal names its check, so only the quota's 429 needs a read (its limit).
    if (!alone) throw new EdgeOfBatch();
    if (err.refused(touch)) throw new OrbitError('RESOURCE_RETIRED', 'queue is retired', { field: 'queue_id' });
    throw await unfinishedTasksQuota(c, app);
  }
  return { outcomes, queues: byQueue, accepted: tasks.length };
}

/** Tasks created inside a caller's transaction (schedule fires and triggers). The batch's edge
 * conditions are thrown as RESOURCE_RETIRED or QUOTA_EXCEEDED; call `afterCommit` after the commit. */
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

/** A workflow step's tasks, inside the advancing transaction; throws like createTasksInTransaction.
 * Returns the created tasks' queues, to wake after the commit. */
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

export class TaskSubmitter {
  private readonly committer: Coalesced<SubmitCommand, SubmitOutcome>;

  constructor(private readonly app: SubmitDeps) {
    // One batch per application in flight below 100 waiting items (batches update the same hot rows);
    // above that, a second batch overlaps its building with the database's work on the first.
    this.committer = coalesce((_group, items) => this.runBatch(items), {
      maxBatch: 500,
      maxParallel: 2,
      maxPerGroup: 1,
      overlapFrom: 100,
      weight: { of: (cmd) => Buffer.byteLength(cmd.prepared.payloadJson), max: () => poolBudget(app.pool).bytes },
    });
  }

  /** Resolves with the outcome, a refusal included; a database failure rejects (retry, same key). */
  submit(cmd: SubmitCommand): Promise<SubmitOutcome> {
    return this.committer(cmd.credential.applicationId, cmd);
  }

  submitMany(cmds: SubmitCommand[]): Promise<SubmitOutcome>[] {
    if (cmds.length === 0) return [];
    return this.committer.all(cmds[0]!.credential.applicationId, cmds);
  }

  private runBatch(items: SubmitCommand[]): Promise<SubmitOutcome[]> {
    return executeIdempotent(
      items,
      async (batch) => {
        const started = process.hrtime.bigint();
        const r = await withTransaction(this.app.pool, 'submit', (c) => createTasksInTx(c, batch, false, true));
        this.app.metrics.commitSeconds.observe({ op: SUBMIT_OPERATION }, Number(process.hrtime.bigint() - started) / 1e9);
        afterCommitOf(this.app, r);
        return r.outcomes as (SubmitOutcome | typeof ALONE)[];
      },
      // At the edge: every item alone, in arrival order, which is the order quota is granted in.
      (err) => err instanceof EdgeOfBatch || isDuplicateKey(err),
      (it) => this.alone(it),
    );
  }

  private async alone(it: SubmitCommand): Promise<SubmitOutcome> {
    try {
      // A batch on another node inserts receipts without the named lock, so the key may commit while
      // this waits (a duplicate key); the next round replays it.
      const r = await runAlone(this.app.pool, it.credential.namespaceId, it.key ?? '', {
        path: 'submit',
        tx: (c) => createTasksInTx(c, [it], true, true),
        taken: isDuplicateKey,
      });
      afterCommitOf(this.app, r);
      return r.outcomes[0] as SubmitOutcome;
    } catch (err) {
      if (err instanceof OrbitError) return { ok: false, error: err };
      // This item's failure is its own answer and never fails its group.
      if (isDatabaseRefusal(err)) {
        return { ok: false, error: new OrbitError('UNAVAILABLE', 'database busy or unavailable; retry with the same Idempotency-Key') };
      }
      this.app.log.error({ err, idempotency_key: it.key }, 'submit failed');
      return { ok: false, error: new OrbitError('INTERNAL', 'internal error; the command was not accepted') };
    }
  }
}
