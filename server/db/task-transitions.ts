// The task row lock taken by every transaction that ends an attempt or a task without one
// (server/dispatch/lifecycle.ts): after the attempt row when it changes both, the lock order of
// every transaction (docs/design.md, "Lock order").
import type { RowDataPacket } from 'mysql2/promise';
import type { Tx } from './pool.js';
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
