import type { RowDataPacket } from 'mysql2/promise';
import { toIso, type Pool, type Tx } from './pool.js';
import type { Task, TaskResult } from '@orbit/protocol/http-views';
import type { TaskWorkflowRef } from '@orbit/protocol/workflow-views';
import { chunkRows } from './packet-budget.js';
import { write } from './pipeline.js';
import { behindInBatch, enterWaiting, keysToLock, lockKeysSql } from './waiting-tasks.js';
import type { TaskState } from '@orbit/protocol/states';
import { Conditions, placeholderRows, placeholders, byIdRead } from './placeholders.js';

/** A task's columns; TaskRow is the same read back from the driver. */
export interface TaskFields {
  id: string;
  namespace_id: string;
  application_id: string;
  queue_id: string;
  seq: string;
  handler: string;
  handler_version: string;
  payload_version: string;
  payload: string;
  business_key: string | null;
  concurrency_key: Buffer | null;
  priority: number;
  state: TaskState;
  attempts_made: number;
  attempts_created: number;
  max_attempts: number;
  not_before: string | null;
  deadline_at: string;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  current_attempt_id: string | null;
  result_outcome: string | null;
  result_output: string | null;
  result_error_code: string | null;
  result_error_message: string | null;
  schedule_id: string | null;
  schedule_version: number | null;
  scheduled_for: string | null;
  workflow_run_id: string | null;
  workflow_step: string | null;
  workflow_index: number | null;
}
export interface TaskRow extends RowDataPacket, TaskFields {}

/** `summary` omits payload and result.output. */
export function taskView(r: TaskFields, summary = false): Task {
  const v: Task = {
    id: r.id,
    namespace_id: r.namespace_id,
    queue_id: r.queue_id,
    handler: r.handler,
    handler_version: r.handler_version,
    payload_version: r.payload_version,
    priority: r.priority,
    state: r.state,
    attempts_made: r.attempts_made,
    max_attempts: r.max_attempts,
    not_before: toIso(r.not_before),
    deadline_at: toIso(r.deadline_at)!,
    created_at: toIso(r.created_at)!,
    updated_at: toIso(r.updated_at)!,
    finished_at: toIso(r.finished_at),
    result: r.result_outcome ? { outcome: r.result_outcome as TaskResult['outcome'] } : null,
  };
  if (v.result && !summary && r.result_output !== null) v.result.output = JSON.parse(r.result_output);
  if (v.result && r.result_error_code) v.result.error = { code: r.result_error_code, message: r.result_error_message ?? '' };
  if (!summary) v.payload = JSON.parse(r.payload);
  if (r.business_key !== null) v.business_key = r.business_key;
  if (r.concurrency_key !== null) v.concurrency_key = r.concurrency_key.toString('utf8');
  if (r.schedule_id) {
    v.schedule_id = r.schedule_id;
    v.schedule_version = Number(r.schedule_version);
    v.scheduled_for = toIso(r.scheduled_for)!;
  }
  const wf = taskWorkflowRef(r);
  if (wf) v.workflow = wf;
  // Stable key order for readers: payload after payload_version.
  return summary ? v : reorder(v);
}

export function taskWorkflowRef(r: Pick<TaskRow, 'workflow_run_id' | 'workflow_step' | 'workflow_index'>): TaskWorkflowRef | undefined {
  if (!r.workflow_run_id) return undefined;
  const ref: TaskWorkflowRef = { run_id: r.workflow_run_id, step: r.workflow_step! };
  if (r.workflow_index !== null && r.workflow_index !== undefined) ref.index = Number(r.workflow_index);
  return ref;
}

function reorder(v: Task): Task {
  const { id, namespace_id, queue_id, handler, handler_version, payload_version, payload, business_key, concurrency_key, ...rest } = v;
  return { id, namespace_id, queue_id, handler, handler_version, payload_version, payload, business_key, concurrency_key, ...rest };
}

export const TASK_COLUMNS = `id, namespace_id, application_id, queue_id, seq, handler, handler_version, payload_version, payload,
  business_key, concurrency_key, priority, state, attempts_made, attempts_created, max_attempts, not_before, deadline_at,
  created_at, updated_at, finished_at, current_attempt_id, result_outcome, result_output, result_error_code, result_error_message,
  schedule_id, schedule_version, scheduled_for, workflow_run_id, workflow_step, workflow_index`;

/** The columns a task's INSERT takes from its row; state and the attempt counts are literals. */
// prettier-ignore
const INSERTED = [
  'id', 'namespace_id', 'application_id', 'queue_id', 'handler', 'handler_version', 'payload_version', 'payload', 'business_key', 'concurrency_key',
  'priority', 'max_attempts', 'not_before', 'deadline_at', 'created_at', 'updated_at', 'schedule_id', 'schedule_version', 'scheduled_for',
  'workflow_run_id', 'workflow_step', 'workflow_index',
] as const satisfies readonly (keyof TaskFields)[];

/** A whole submit batch, queued: task rows, key row locks and waiting rows. Times come from the
 * database clock, so nothing is read back. */
export async function insertTasks(c: Tx, tasks: TaskFields[]): Promise<void> {
  const rows = tasks.map((t) => INSERTED.map((n) => t[n]));
  for (const chunk of chunkRows(c, rows, (r) => r)) {
    const row = `(${placeholders(INSERTED.length)}, 'WAITING', 0, 0)`;
    await write(
      c,
      `INSERT INTO tasks (${INSERTED.join(', ')}, state, attempts_made, attempts_created) VALUES ${placeholderRows(chunk.length, row)}`,
      chunk.flat(),
    );
  }
  // Key rows after the task rows and before the queue and application rows (the lock order).
  const lock = lockKeysSql(keysToLock(tasks));
  if (lock) await write(c, ...lock);
  const ids = tasks.map((t) => t.id);
  await enterWaiting(c, ids, lock ? behindInBatch(tasks) : null);
}

export const getTask = byIdRead<TaskRow>('tasks', TASK_COLUMNS);

/** The task rows by id, locked FOR UPDATE in one statement (in id order, the primary key's), by
 * every transaction that ends an attempt or a task without one (dispatch/lifecycle.ts). The caller
 * holds each task's live attempt, so no other transaction that locks an attempt before its task
 * waits for these rows while holding one of ours (docs/design.md, "Lock order"). */
export async function lockTasks(c: Tx, rows: { namespace_id: string; task_id: string }[]): Promise<Map<string, TaskRow>> {
  if (rows.length === 0) return new Map();
  const ids = [...new Set(rows.map((r) => r.task_id))];
  const namespaces = [...new Set(rows.map((r) => r.namespace_id))];
  const [locked] = await c.query<TaskRow[]>(
    `SELECT ${TASK_COLUMNS} FROM tasks WHERE id IN (${placeholders(ids.length)}) AND namespace_id IN (${placeholders(namespaces.length)}) FOR UPDATE`,
    [...ids, ...namespaces],
  );
  return new Map(locked.map((t) => [t.id, t]));
}

export interface TaskFilter {
  namespaceId: string;
  queueIds: '*' | string[];
  queueId?: string;
  state?: TaskState;
  concurrencyKey?: Buffer;
  businessKey?: string;
  beforeSeq?: string;
  limit: number;
}

export async function listTasks(pool: Pool, f: TaskFilter): Promise<TaskRow[]> {
  const where = new Conditions('namespace_id = ?', f.namespaceId);
  if (f.queueId) where.and('queue_id = ?', f.queueId);
  else if (f.queueIds !== '*') {
    if (f.queueIds.length === 0) return [];
    where.and(`queue_id IN (${placeholders(f.queueIds.length)})`, ...f.queueIds);
  }
  if (f.state) where.and('state = ?', f.state);
  if (f.concurrencyKey) where.and('concurrency_key = ?', f.concurrencyKey);
  // utf8mb4_bin is a PAD SPACE collation ('a' = 'a '): the byte length makes the match exact.
  if (f.businessKey) where.and('business_key = ? AND OCTET_LENGTH(business_key) = ?', f.businessKey, Buffer.byteLength(f.businessKey, 'utf8'));
  if (f.beforeSeq) where.and('seq < ?', f.beforeSeq);
  const [rows] = await pool.query<TaskRow[]>(
    `SELECT ${TASK_COLUMNS.replace('payload,', "'' AS payload,")} FROM tasks WHERE ${where} ORDER BY seq DESC LIMIT ${f.limit + 1}`,
    where.args,
  );
  return rows;
}
