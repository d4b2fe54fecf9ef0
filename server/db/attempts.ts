// The attempts table: the row and its wire view, single-attempt reads, and the hello's and the
// reconciler's reads (batches: attempt-batches.ts, sweep-sql.ts, attempt-leases.ts).
import type { RowDataPacket } from 'mysql2/promise';
import { toIso, type Conn, type Pool, type Tx } from './pool.js';
import type { Attempt } from '@orbit/protocol/http-views';
import type { AttemptState } from '@orbit/protocol/states';
import { placeholders, byIdRead } from './placeholders.js';

/** An attempt's columns (AttemptRow adds what its reads compute). */
export interface AttemptFields {
  id: string;
  task_id: string;
  namespace_id: string;
  application_id: string;
  queue_id: string;
  attempt_no: number;
  state: AttemptState;
  worker_id: string;
  session_id: string;
  concurrency_key: Buffer | null;
  concurrency_token: string | null;
  leased_at: string;
  started_at: string | null;
  lease_expires_at: string;
  finished_at: string | null;
  outcome: string | null;
  output: string | null;
  error_code: string | null;
  error_message: string | null;
  result_fingerprint: string | null;
  result_reply: string | null;
}

export interface AttemptRow extends RowDataPacket, AttemptFields {
  /** 1 when lease_expires_at > now (computed by the database clock in the query). */
  lease_live: number;
  /** The database clock when the row was read (lease times are computed from it). */
  db_now: string;
}

export const ATTEMPT_COLUMNS = `id, task_id, namespace_id, application_id, queue_id, attempt_no, state, worker_id, session_id,
  concurrency_key, concurrency_token, leased_at, started_at, lease_expires_at, finished_at, outcome, output, error_code,
  error_message, result_fingerprint, result_reply, (lease_expires_at > UTC_TIMESTAMP(3)) AS lease_live, UTC_TIMESTAMP(3) AS db_now`;

/** `lock` 'nowait': a row another transaction holds fails the statement at once with 1205, which
 * withTransaction retries (for a lock taken out of the documented order, which must not wait). */
export const getAttempt = byIdRead<AttemptRow>('attempts', ATTEMPT_COLUMNS);

export async function listTaskAttempts(db: Pool | Conn, namespaceId: string, taskId: string): Promise<AttemptRow[]> {
  const sql = `SELECT ${ATTEMPT_COLUMNS} FROM attempts WHERE task_id = ? AND namespace_id = ? ORDER BY attempt_no`;
  const [rows] = await db.execute<AttemptRow[]>(sql, [taskId, namespaceId]);
  return rows;
}

/** The hello's, in id order: it resumes or releases each. */
export async function lockLiveAttemptsOfWorker(c: Tx, namespaceId: string, workerId: string): Promise<AttemptRow[]> {
  const [live] = await c.execute<AttemptRow[]>(
    `SELECT ${ATTEMPT_COLUMNS} FROM attempts WHERE namespace_id = ? AND worker_id = ? AND is_live = 1 ORDER BY id FOR UPDATE`,
    [namespaceId, workerId],
  );
  return live;
}

/** No lock: the hello reads back the attempts it resumed, under the locks it already holds. */
export async function readAttempts(c: Conn, ids: string[]): Promise<AttemptRow[]> {
  const [rows] = await c.query<AttemptRow[]>(`SELECT ${ATTEMPT_COLUMNS} FROM attempts WHERE id IN (${placeholders(ids.length)}) ORDER BY id`, ids);
  return rows;
}

export type AttemptHolderRow = RowDataPacket & Pick<AttemptFields, 'id' | 'state' | 'session_id' | 'error_code' | 'result_fingerprint'>;

/** No lock: the reconciler compares them with what this node's sessions think they hold. */
export async function attemptHolders(pool: Pool, ids: string[]): Promise<AttemptHolderRow[]> {
  const [rows] = await pool.query<AttemptHolderRow[]>(
    `SELECT id, state, session_id, error_code, result_fingerprint FROM attempts WHERE id IN (${placeholders(ids.length)})`,
    ids,
  );
  return rows;
}

export function attemptView(r: AttemptRow): Attempt {
  const v: Attempt = {
    id: r.id,
    task_id: r.task_id,
    attempt_no: r.attempt_no,
    state: r.state,
    worker_id: r.worker_id,
    session_id: r.session_id,
    leased_at: toIso(r.leased_at)!,
    started_at: toIso(r.started_at),
    lease_expires_at: toIso(r.lease_expires_at)!,
    finished_at: toIso(r.finished_at),
    outcome: r.outcome,
    error: r.error_code ? { code: r.error_code, message: r.error_message ?? '' } : null,
  };
  if (r.concurrency_key !== null && r.concurrency_token !== null) {
    const { id, task_id, attempt_no, state, worker_id, session_id, ...rest } = v;
    return { id, task_id, attempt_no, state, worker_id, session_id, concurrency_token: String(r.concurrency_token), ...rest };
  }
  return v;
}
