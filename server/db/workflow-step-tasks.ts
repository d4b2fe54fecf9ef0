// The tasks of started steps. The primary key (run_id, step_key, item_index) is advancement's
// exactly-once guard.
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn, Pool, Tx } from './pool.js';
import type { TaskFields } from './tasks.js';
import { placeholderRows, placeholders } from './placeholders.js';

/** The step-task rows of the workflow tasks among `tasks`, created with them. */
export async function insertStepTasks(c: Conn, tasks: TaskFields[]): Promise<void> {
  const rows = tasks.filter((t) => t.workflow_run_id);
  if (rows.length === 0) return;
  await c.query(
    `INSERT INTO workflow_step_tasks (run_id, step_key, item_index, namespace_id, application_id, task_id, created_at) VALUES ${placeholderRows(rows.length, '(?, ?, ?, ?, ?, ?, ?)')}`,
    rows.flatMap((t) => [t.workflow_run_id, t.workflow_step, t.workflow_index ?? 0, t.namespace_id, t.application_id, t.id, t.created_at]),
  );
}

export type StepTaskRow = Pick<TaskFields, 'state' | 'result_output' | 'result_error_code' | 'result_error_message'> & {
  step_key: string;
  item_index: number;
  task_id: string;
};

/** No lock: the caller holds the run row, which every advancement of the run takes. */
export async function readStepTasks(db: Pool | Conn, runId: string, stepKeys: string[] | null, withOutput = true): Promise<StepTaskRow[]> {
  if (stepKeys !== null && stepKeys.length === 0) return [];
  const [rows] = await db.query<(StepTaskRow & RowDataPacket)[]>(
    `SELECT st.step_key, st.item_index, st.task_id, t.state, ${withOutput ? 't.result_output' : 'NULL AS result_output'}, t.result_error_code, t.result_error_message
       FROM workflow_step_tasks st JOIN tasks t ON t.id = st.task_id
      WHERE st.run_id = ?${stepKeys === null ? '' : ` AND st.step_key IN (${placeholders(stepKeys.length)})`}
      ORDER BY st.step_key, st.item_index`,
    [runId, ...(stepKeys ?? [])],
  );
  return rows;
}

/** No lock: a run :cancel locks them next, before the tasks, as results and the sweeper do. */
export async function currentAttemptIds(c: Conn, taskIds: string[]): Promise<string[]> {
  if (taskIds.length === 0) return [];
  const [rows] = await c.query<RowDataPacket[]>(
    `SELECT current_attempt_id FROM tasks WHERE id IN (${placeholders(taskIds.length)}) AND state = 'LEASED' AND current_attempt_id IS NOT NULL
      ORDER BY current_attempt_id`,
    taskIds,
  );
  return rows.map((r) => r.current_attempt_id as string);
}

export async function lockTasksById(c: Tx, taskIds: string[]): Promise<void> {
  if (taskIds.length === 0) return;
  const sorted = [...taskIds].sort();
  await c.query(`SELECT id FROM tasks WHERE id IN (${placeholders(sorted.length)}) ORDER BY id FOR UPDATE`, sorted);
}
