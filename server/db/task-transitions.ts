// Single-task state changes shared by results, cancels, resolves and the sweeper
// (server/dispatch/finish-task.ts, revoke.ts, sweeper.ts, task-commands.ts). Each runs in the caller's
// transaction, which locks the task row (lockTask) before changing it — after the attempt row when
// it changes both, the lock order of every transaction (docs/design.md, "Lock order").
import type { RowDataPacket } from 'mysql2/promise';
import type { TerminalTaskState } from '@orbit/protocol/states';
import type { Conn, Tx } from './pool.js';
import { TASK_COLUMNS, type TaskRow } from './tasks.js';

/** lockTask(namespace_id, task_id) → the task row, locked FOR UPDATE. The caller knows it exists
 * (it holds an attempt of it, or read it under lock). */
export async function lockTask(c: Tx, namespaceId: string, taskId: string): Promise<TaskRow> {
  const [rows] = await c.execute<(TaskRow & RowDataPacket)[]>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ? AND namespace_id = ? FOR UPDATE`, [
    taskId,
    namespaceId,
  ]);
  return rows[0]!;
}

/** requeueUnstartedTask(task_id, attempt_id) → true when the task went back to WAITING after its
 * never-started attempt was revoked (that attempt was still its current one; such an attempt does
 * not count against max_attempts, so attempts_made stays). The caller holds the row lock and has
 * the waiting row written (PermitLedger.enterWaiting: under the key row's lock). */
export async function requeueUnstartedTask(c: Tx, taskId: string, attemptId: string): Promise<boolean> {
  const [res] = await c.execute(
    `UPDATE tasks SET state = 'WAITING', current_attempt_id = NULL, updated_at = UTC_TIMESTAMP(3) WHERE id = ? AND current_attempt_id = ?`,
    [taskId, attemptId],
  );
  return (res as { affectedRows: number }).affectedRows === 1;
}

export interface FinishedTask {
  /** Terminal state or NEEDS_REVIEW. */
  state: TerminalTaskState | 'NEEDS_REVIEW';
  attemptsMade: number;
  outcome: string;
  /** JSON text or null. */
  output: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  /** true: finished_at = now; false (NEEDS_REVIEW): finished_at = NULL. */
  terminal: boolean;
}

/** finishTaskRow(task_id, state, attempts_made, outcome, output, error code/message, terminal):
 * the task leaves its attempt with its result; the caller holds the row lock. */
export async function finishTaskRow(c: Conn, taskId: string, f: FinishedTask): Promise<void> {
  await c.execute(
    `UPDATE tasks SET state = ?, current_attempt_id = NULL, attempts_made = ?, result_outcome = ?, result_output = ?, result_error_code = ?,
            result_error_message = ?, updated_at = UTC_TIMESTAMP(3), finished_at = ${f.terminal ? 'UTC_TIMESTAMP(3)' : 'NULL'}
      WHERE id = ?`,
    [f.state, f.attemptsMade, f.outcome, f.output, f.errorCode, f.errorMessage, taskId],
  );
}

/** reopenTaskForRetry(task_id): a NEEDS_REVIEW task resolved as `retry` goes back to WAITING, due
 * now (not_before NULL), with its result cleared; the caller holds the row lock and has the
 * waiting row written (PermitLedger.enterWaiting: under the key row's lock). */
export async function reopenTaskForRetry(c: Tx, taskId: string): Promise<void> {
  await c.execute(
    `UPDATE tasks SET state = 'WAITING', not_before = NULL, result_outcome = NULL, result_output = NULL, result_error_code = NULL,
              result_error_message = NULL, updated_at = UTC_TIMESTAMP(3) WHERE id = ?`,
    [taskId],
  );
}
