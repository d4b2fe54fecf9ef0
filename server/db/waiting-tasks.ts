// The claimable work (migration 000007): one waiting_tasks row per WAITING task, clustered in claim
// order (queue_id, priority DESC, seq). Written only by a transaction that holds the task row's
// lock and changes its state in the same transaction — tasks before waiting_tasks in the lock
// order (docs/design.md) — so a task is WAITING exactly when its row exists, at every commit:
//   enterWaiting(task ids)   after the task row became WAITING (submit, retry, requeue, resolve retry)
//   leaveWaiting(rows)       when it leaves WAITING (claim, hand-off, refill, cancel, deadline)
// Both are queued writes of the transaction (db/pipeline.ts Tx): they travel with the next
// statement of the transaction.
import type { Tx } from './pool.js';
import { write } from './pipeline.js';
import { placeholders, placeholderRows } from './placeholders.js';

/** The primary key of a task's waiting row: the task's queue, priority and seq. */
export interface WaitingKey {
  queue_id: string;
  priority: number;
  seq: string | bigint;
}

/** enterWaiting(task ids): the waiting rows of tasks that just became WAITING, copied from their
 * rows (read by primary key; the caller holds their locks). One INSERT … SELECT for any number. */
export async function enterWaiting(c: Tx, taskIds: string[]): Promise<void> {
  if (taskIds.length === 0) return;
  await write(
    c,
    `INSERT INTO waiting_tasks (queue_id, priority, seq, task_id, namespace_id, application_id, handler, handler_version, concurrency_key,
        not_before, deadline_at, created_at)
     SELECT queue_id, priority, seq, id, namespace_id, application_id, handler, handler_version, concurrency_key, not_before, deadline_at, created_at
       FROM tasks WHERE id IN (${placeholders(taskIds.length)})`,
    taskIds,
  );
}

/** leaveWaiting(rows [queue, priority, seq]): deletes the waiting rows of tasks that leave WAITING
 * in this transaction, by primary key. One row is named by its three columns, not by a one-element
 * row list: MariaDB 10.11 plans a single-table DELETE whose WHERE is `(a, b, c) IN ((x, y, z))`
 * (rewritten to a row equality) as a full scan — measured in the bench's profile: every hand-off
 * and lone refill read the whole waiting table, 50–60 rows examined per task and 7 % of the
 * database's CPU on `unkeyed-batch` (docs/benchmarks.md, "Where mariadbd's CPU goes"). Two rows
 * and more are a `range` read of the primary key (test/statement-plans.test.ts). */
export async function leaveWaiting(c: Tx, rows: WaitingKey[]): Promise<void> {
  if (rows.length === 0) return;
  await write(c, ...leaveWaitingSql(rows));
}

export function leaveWaitingSql(rows: WaitingKey[]): [string, unknown[]] {
  const values = rows.flatMap((r) => [r.queue_id, r.priority, String(r.seq)]);
  if (rows.length === 1) return ['DELETE FROM waiting_tasks WHERE queue_id = ? AND priority = ? AND seq = ?', values];
  return [`DELETE FROM waiting_tasks WHERE (queue_id, priority, seq) IN (${placeholderRows(rows.length, '(?, ?, ?)')})`, values];
}
