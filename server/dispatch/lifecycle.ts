// start, renew and result: each one transaction that checks the attempt under its row lock, so a
// late, duplicate or foreign frame changes nothing and nothing is released twice.
import crypto from 'node:crypto';
import type { RowDataPacket } from 'mysql2/promise';
import { OrbitError } from '@orbit/protocol/errors';
import type { ResultFrame } from '@orbit/protocol/frames';
import { canonicalJson, ID_RE } from '@orbit/protocol/validation';
import { withTransaction, toIso, type Conn, type Pool } from '../db/pool.js';
import type { TaskRow } from '../db/tasks.js';
import { TASK_COLUMNS } from '../db/tasks.js';
import { getAttempt, closeAttempt, isLive, type AttemptRow } from './attempts-sql.js';
import { PermitLedger } from './ledger.js';
import { OUTCOME_EVENT } from './events.js';

/** DATETIME(3) string + seconds, as a DATETIME(3) string (both UTC). */
export function addSeconds(dbTime: string, seconds: number): string {
  const ms = Date.parse(dbTime.replace(' ', 'T') + 'Z') + seconds * 1000;
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

/** A queue's lease length. Read without a lock (it is configuration, not a permit) and cached for
 * a few seconds: `start` runs for every task and would otherwise pay a statement for it. */
const leaseCache = new Map<string, { seconds: number; at: number }>();
export async function queueLeaseSeconds(c: Conn, queueId: string): Promise<number> {
  const hit = leaseCache.get(queueId);
  if (hit && Date.now() - hit.at < 5_000) return hit.seconds;
  const [rows] = await c.execute<RowDataPacket[]>('SELECT lease_seconds FROM queues WHERE id = ?', [queueId]);
  const seconds = Number(rows[0]!.lease_seconds);
  if (leaseCache.size > 10_000) leaseCache.clear();
  leaseCache.set(queueId, { seconds, at: Date.now() });
  return seconds;
}

export interface Identity {
  namespaceId: string;
  workerId: string;
}

async function lockTask(c: Conn, namespaceId: string, taskId: string): Promise<TaskRow> {
  const [rows] = await c.execute<(TaskRow & RowDataPacket)[]>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ? AND namespace_id = ? FOR UPDATE`, [taskId, namespaceId]);
  return rows[0]!;
}

function leaseLost(attemptId: string, why: string): OrbitError {
  return new OrbitError('LEASE_LOST', why, { attempt_id: attemptId });
}

async function lockOwnAttempt(c: Conn, who: Identity, attemptId: string): Promise<AttemptRow> {
  const a = ID_RE.test(attemptId) ? await getAttempt(c, who.namespaceId, attemptId, true) : null;
  if (!a) throw new OrbitError('NOT_FOUND', 'unknown attempt', { attempt_id: attemptId });
  if (a.worker_id !== who.workerId) throw leaseLost(attemptId, 'attempt belongs to another worker');
  return a;
}

/** `start`: LEASED → RUNNING (task RUNNING, attempts_made + 1), lease renewed; a repeated start
 * of a RUNNING attempt answers again. Runs inside a caller's (coalesced) transaction. */
export async function startInTx(c: Conn, who: Identity, attemptId: string): Promise<{ leaseExpiresAt: string }> {
  const a = await lockOwnAttempt(c, who, attemptId);
  if (!isLive(a) || !a.lease_live) throw leaseLost(attemptId, `attempt is ${a.lease_live ? a.state : 'past its lease'}`);
  if (a.state === 'RUNNING') return { leaseExpiresAt: toIso(a.lease_expires_at)! };
  // One statement moves attempt and task to RUNNING; the lease end is computed from the database
  // clock read with the row lock. The deadline condition keeps a start that races the deadline
  // sweep from turning a never-started attempt of a late task into RUNNING (dispatch.md).
  const expires = addSeconds(a.db_now, await queueLeaseSeconds(c, a.queue_id));
  const [res] = await c.execute(
    `UPDATE attempts a JOIN tasks t ON t.id = a.task_id AND t.current_attempt_id = a.id
        SET a.state = 'RUNNING', a.started_at = ?, a.lease_expires_at = ?,
            t.state = 'RUNNING', t.attempts_made = t.attempts_made + 1, t.updated_at = ?
      WHERE a.id = ? AND t.deadline_at > ?`,
    [a.db_now, expires, a.db_now, attemptId, a.db_now],
  );
  if ((res as { affectedRows: number }).affectedRows === 0) throw leaseLost(attemptId, 'task deadline passed before start');
  return { leaseExpiresAt: toIso(expires)! };
}

/** `renew`: extends each live, unexpired attempt of this worker identity to now + lease. */
export async function renewAttempts(pool: Pool, who: Identity, ids: string[]): Promise<{ leases: { attempt_id: string; lease_expires_at: string }[]; lost: string[] }> {
  const valid = [...new Set(ids.filter((id) => ID_RE.test(id)))];
  if (valid.length === 0) return { leases: [], lost: ids };
  const placeholders = valid.map(() => '?').join(',');
  return withTransaction(pool, async (c) => {
    await c.query(
      `UPDATE attempts a JOIN queues q ON q.id = a.queue_id
          SET a.lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL q.lease_seconds SECOND
        WHERE a.id IN (${placeholders}) AND a.namespace_id = ? AND a.worker_id = ?
          AND a.state IN ('LEASED','RUNNING') AND a.lease_expires_at > UTC_TIMESTAMP(3)`,
      [...valid, who.namespaceId, who.workerId],
    );
    const [rows] = await c.query<RowDataPacket[]>(
      `SELECT id, lease_expires_at FROM attempts
        WHERE id IN (${placeholders}) AND namespace_id = ? AND worker_id = ? AND state IN ('LEASED','RUNNING') AND lease_expires_at > UTC_TIMESTAMP(3)`,
      [...valid, who.namespaceId, who.workerId],
    );
    const ok = new Map(rows.map((r) => [r.id as string, toIso(r.lease_expires_at as string)!]));
    return {
      leases: [...ok].map(([attempt_id, lease_expires_at]) => ({ attempt_id, lease_expires_at })),
      lost: ids.filter((id) => !ok.has(id)),
    };
  });
}

export interface ResultReply {
  type: 'result.ok';
  attempt_id: string;
  deduplicated: boolean;
  task_state: string;
}


function resultFingerprint(f: ResultFrame): string {
  return crypto
    .createHash('sha256')
    .update(canonicalJson({ outcome: f.outcome, output: f.output, error: f.error, retry_after_ms: f.retry_after_ms }))
    .digest('hex');
}

/** Backoff for a retry: the worker's retry_after_ms, else initial × multiplier^(n−1) capped, with
 * ±20 % jitter so that a burst of failures does not come back in lockstep. */
export function retryBackoffMs(frame: { retry_after_ms?: number }, q: { initial: number; max: number; multiplier: number }, attemptsMade: number): number {
  if (frame.retry_after_ms !== undefined) return frame.retry_after_ms;
  const base = Math.min(q.max, q.initial * Math.pow(q.multiplier, Math.max(0, attemptsMade - 1)));
  return Math.max(0, Math.round(base * (0.8 + Math.random() * 0.4)));
}

/** The body of `result` inside a caller's transaction; permit releases and the event go to
 * `ledger`, which the caller flushes before commit. */
export async function resultInTx(c: Conn, ledger: PermitLedger, who: Identity, f: ResultFrame, maxOutputBytes = 256 * 1024): Promise<ResultReply> {
  const output = f.output === undefined ? null : JSON.stringify(f.output);
  if (output !== null && Buffer.byteLength(output) > maxOutputBytes) {
    throw new OrbitError('PAYLOAD_TOO_LARGE', `output over ${maxOutputBytes} bytes`, { attempt_id: f.attempt_id });
  }
  const fp = resultFingerprint(f);
  {
    const a = await lockOwnAttempt(c, who, f.attempt_id);
    if (!isLive(a)) {
      if (a.result_fingerprint === fp && a.result_reply) return { ...(JSON.parse(a.result_reply) as ResultReply), deduplicated: true };
      if (a.result_fingerprint) throw new OrbitError('STATE_CONFLICT', 'a different result was already accepted for this attempt', { attempt_id: f.attempt_id });
      throw leaseLost(f.attempt_id, `attempt is ${a.state}`);
    }
    if (!a.lease_live) throw leaseLost(f.attempt_id, 'attempt is past its lease');
    const t = await lockTask(c, a.namespace_id, a.task_id);
    // A result for a never-started attempt counts it as started (attempts_made counts attempts
    // that reached RUNNING; the worker evidently ran it).
    const attemptsMade = t.attempts_made + (a.state === 'LEASED' ? 1 : 0);
    const err = f.error ?? null;
    let attemptState: string;
    let taskState: string;
    let taskOutcome: string | null = null;
    let backoffMs = 0;
    switch (f.outcome) {
      case 'succeeded':
        attemptState = 'SUCCEEDED';
        taskState = 'SUCCEEDED';
        taskOutcome = 'succeeded';
        break;
      case 'failed':
        attemptState = 'FAILED';
        taskState = 'FAILED';
        taskOutcome = 'failed';
        break;
      case 'unknown':
        attemptState = 'UNKNOWN';
        taskState = 'NEEDS_REVIEW';
        taskOutcome = 'unknown';
        break;
      default: {
        attemptState = 'RETRY';
        const [qrows] = await c.execute<RowDataPacket[]>(
          'SELECT retry_initial_backoff_ms, retry_max_backoff_ms, retry_multiplier FROM queues WHERE id = ?',
          [a.queue_id],
        );
        const q = qrows[0]!;
        const backoff = retryBackoffMs(f, { initial: Number(q.retry_initial_backoff_ms), max: Number(q.retry_max_backoff_ms), multiplier: Number(q.retry_multiplier) }, attemptsMade);
        const [[{ pastDeadline }]] = (await c.query('SELECT (UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND) >= ? AS pastDeadline', [
          backoff * 1000,
          t.deadline_at,
        ])) as unknown as [[{ pastDeadline: number }]];
        backoffMs = backoff;
        if (attemptsMade >= t.max_attempts || Number(pastDeadline) === 1) {
          taskState = 'FAILED';
          taskOutcome = 'failed';
        } else taskState = 'WAITING';
      }
    }
    const replyObj: ResultReply = { type: 'result.ok', attempt_id: a.id, deduplicated: false, task_state: taskState };
    await closeAttempt(c, a.id, {
      state: attemptState,
      outcome: f.outcome,
      output,
      errorCode: err?.code ?? null,
      errorMessage: err?.message ?? null,
      fingerprint: fp,
      reply: JSON.stringify(replyObj),
      markStarted: true,
    });
    ledger.releaseAttempt(a);
    if (taskState === 'WAITING') {
      await c.execute(
        `UPDATE tasks SET state = 'WAITING', current_attempt_id = NULL, attempts_made = ?, not_before = UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND, updated_at = UTC_TIMESTAMP(3)
          WHERE id = ?`,
        [attemptsMade, backoffMs * 1000, t.id],
      );
    } else {
      await finishTask(c, ledger, t, { state: taskState, outcome: taskOutcome!, output: f.outcome === 'succeeded' ? output : null, error: err, attemptsMade });
    }
    return replyObj;
  }
}

/** Moves a task to a terminal state or NEEDS_REVIEW with its result, and records the event and
 * the unfinished-count change in the ledger. The caller holds the task row lock. */
export async function finishTask(
  c: Conn,
  ledger: PermitLedger,
  t: TaskRow,
  r: { state: string; outcome: string; output?: string | null; error?: { code: string; message: string } | null; attemptsMade?: number },
): Promise<void> {
  const terminal = r.state !== 'NEEDS_REVIEW';
  await c.execute(
    `UPDATE tasks SET state = ?, current_attempt_id = NULL, attempts_made = ?, result_outcome = ?, result_output = ?, result_error_code = ?,
            result_error_message = ?, updated_at = UTC_TIMESTAMP(3), finished_at = ${terminal ? 'UTC_TIMESTAMP(3)' : 'NULL'}
      WHERE id = ?`,
    [r.state, r.attemptsMade ?? t.attempts_made, r.outcome, r.output ?? null, r.error?.code ?? null, r.error?.message ?? null, t.id],
  );
  if (terminal) ledger.taskFinished(t.application_id);
  const result: Record<string, unknown> = { outcome: r.outcome };
  if (r.output) result.output = JSON.parse(r.output);
  if (r.error) result.error = r.error;
  ledger.event({ namespaceId: t.namespace_id, type: OUTCOME_EVENT[r.outcome]!, taskId: t.id, queueId: t.queue_id, result });
}

export { lockTask };
