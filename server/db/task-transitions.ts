// The task row lock taken by every transaction that ends an attempt or a task without one
// (server/dispatch/lifecycle.ts): after the attempt row when it changes both, the lock order of
// every transaction (docs/design.md, "Lock order").
import type { RowDataPacket } from 'mysql2/promise';
import type { Tx } from './pool.js';
import { TASK_COLUMNS, type TaskRow } from './tasks.js';
import { placeholders } from './placeholders.js';

/** lockTask(namespace_id, task_id) → the task row, locked FOR UPDATE. The caller knows it exists
 * (it holds an attempt of it, or read it under lock). */
export async function lockTask(c: Tx, namespaceId: string, taskId: string): Promise<TaskRow> {
  const [rows] = await c.execute<(TaskRow & RowDataPacket)[]>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ? AND namespace_id = ? FOR UPDATE`, [
    taskId,
    namespaceId,
  ]);
  return rows[0]!;
}

/** lockTasks(namespace, ids) → the task rows by id, locked FOR UPDATE in one statement (in id
 * order, the primary key's). The caller holds each task's live attempt, so no other transaction
 * that locks an attempt before its task waits for these rows while holding one of ours. */
export async function lockTasks(c: Tx, rows: { namespace_id: string; task_id: string }[]): Promise<Map<string, TaskRow>> {
  if (rows.length === 0) return new Map();
  const ids = [...new Set(rows.map((r) => r.task_id))];
  const namespaces = [...new Set(rows.map((r) => r.namespace_id))];
  const [locked] = await c.query<(TaskRow & RowDataPacket)[]>(
    `SELECT ${TASK_COLUMNS} FROM tasks WHERE id IN (${placeholders(ids.length)}) AND namespace_id IN (${placeholders(namespaces.length)}) FOR UPDATE`,
    [...ids, ...namespaces],
  );
  return new Map(locked.map((t) => [t.id, t]));
}
