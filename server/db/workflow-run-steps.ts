// SQL operations on the steps of runs. The run row is the lock of its steps.
import type { RowDataPacket } from 'mysql2/promise';
import type { WorkflowStepState } from '@orbit/protocol/states';
import type { SkipReason } from '@orbit/protocol/workflow-views';
import type { Conn, Pool } from './pool.js';
import { placeholders } from './placeholders.js';

export interface RunStepRow {
  run_id: string;
  step_key: string;
  namespace_id: string;
  application_id: string;
  run_seq: string;
  state: WorkflowStepState;
  ready_cause: 'paused' | 'quota' | null;
  skipped_because: SkipReason | null;
  task_count: number;
  output: string | null;
  error_code: string | null;
  error_message: string | null;
  signal_deadline_at: string | null;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
}

/** The columns written as they are; the times after them are computed (writeRunSteps). */
// prettier-ignore
const PLAIN = [
  'run_id', 'step_key', 'namespace_id', 'application_id', 'run_seq', 'state', 'ready_cause', 'skipped_because', 'task_count', 'output', 'error_code',
  'error_message',
] as const satisfies readonly (keyof RunStepRow)[];
const COLUMNS = `${PLAIN.join(', ')}, signal_deadline_at, started_at, finished_at, updated_at`;

export async function readRunSteps(db: Pool | Conn, runIds: string[]): Promise<RunStepRow[]> {
  if (runIds.length === 0) return [];
  const [rows] = await db.query<(RunStepRow & RowDataPacket)[]>(
    `SELECT ${COLUMNS} FROM workflow_run_steps WHERE run_id IN (${placeholders(runIds.length)}) ORDER BY run_id, step_key`,
    runIds,
  );
  return rows.map((r) => ({ ...r, run_seq: String(r.run_seq) }));
}

/** Times are a DATETIME(3) string, `now` or, for signal_deadline_at, seconds after now. */
export type StepWrite = Omit<RunStepRow, 'updated_at' | 'signal_deadline_at' | 'started_at' | 'finished_at'> & {
  signal_deadline_at: string | { seconds: number } | null;
  started_at: string | 'now' | null;
  finished_at: string | 'now' | null;
};

export async function writeRunSteps(c: Conn, rows: StepWrite[]): Promise<void> {
  if (rows.length === 0) return;
  const args: unknown[] = [];
  const time = (v: string | 'now' | null) => {
    if (v === 'now') return 'UTC_TIMESTAMP(3)';
    args.push(v);
    return '?';
  };
  const values = rows.map((r) => {
    args.push(...PLAIN.map((n) => r[n]));
    let deadline = '?';
    if (r.signal_deadline_at !== null && typeof r.signal_deadline_at === 'object') {
      deadline = 'UTC_TIMESTAMP(3) + INTERVAL ? SECOND';
      args.push(r.signal_deadline_at.seconds);
    } else args.push(r.signal_deadline_at);
    const started = time(r.started_at);
    const finished = time(r.finished_at);
    return `(${placeholders(PLAIN.length)}, ${deadline}, ${started}, ${finished}, UTC_TIMESTAMP(3))`;
  });
  await c.query(
    `INSERT INTO workflow_run_steps (${COLUMNS}) VALUES ${values.join(', ')}
     ON DUPLICATE KEY UPDATE state = VALUES(state), ready_cause = VALUES(ready_cause), skipped_because = VALUES(skipped_because),
       task_count = VALUES(task_count), output = VALUES(output), error_code = VALUES(error_code), error_message = VALUES(error_message),
       signal_deadline_at = VALUES(signal_deadline_at), started_at = VALUES(started_at), finished_at = VALUES(finished_at),
       updated_at = VALUES(updated_at)`,
    args,
  );
}

/** Read apart from their runs, so one application's stuck runs never hide another's. */
export async function quotaReadyApplications(pool: Pool, limit: number): Promise<string[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT DISTINCT application_id FROM workflow_run_steps WHERE ready_cause = 'quota' ORDER BY application_id LIMIT ?`,
    [limit],
  );
  return rows.map((r) => r.application_id as string);
}

export async function quotaReadyRuns(
  pool: Pool,
  applicationId: string,
  limit: number,
): Promise<{ run_id: string; namespace_id: string; application_id: string }[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT run_id, MIN(namespace_id) AS namespace_id, MIN(run_seq) AS s FROM workflow_run_steps
      WHERE ready_cause = 'quota' AND application_id = ? GROUP BY run_id ORDER BY s LIMIT ?`,
    [applicationId, limit],
  );
  return rows.map((r) => ({ run_id: r.run_id as string, namespace_id: r.namespace_id as string, application_id: applicationId }));
}

export async function dueSignalSteps(pool: Pool, limit: number): Promise<{ run_id: string; step_key: string; namespace_id: string }[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT run_id, step_key, namespace_id FROM workflow_run_steps
      WHERE state = 'WAITING_SIGNAL' AND signal_deadline_at <= UTC_TIMESTAMP(3) ORDER BY signal_deadline_at LIMIT ?`,
    [limit],
  );
  return rows.map((r) => ({ run_id: r.run_id as string, step_key: r.step_key as string, namespace_id: r.namespace_id as string }));
}
