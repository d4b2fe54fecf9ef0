// The statements of the sweeper (server/dispatch/sweeper.ts) and of the release of attempts
// claimed for a session that closed before delivery, each with a named purpose. Every locking read
// takes its rows FOR UPDATE SKIP LOCKED, so several nodes' sweepers share the work instead of
// waiting on each other; a row another transaction holds is simply left for the next sweep.
//   applicationsDue (no lock, before the transactions) → per application, in one transaction:
//   lockExpiredAttempts → lockLateLeasedAttempts → lockOverdueWaitingTasks.
import type { RowDataPacket } from 'mysql2/promise';
import type { Tx, Pool } from './pool.js';
import { ATTEMPT_COLUMNS, type AttemptRow } from './attempts.js';
import { placeholders } from './placeholders.js';

/** The attempts matching `where`, soonest lease expiry first, at most `limit`, locked SKIP LOCKED. */
async function lockAttempts(c: Tx, where: string, args: unknown[], limit: number): Promise<AttemptRow[]> {
  const [rows] = await c.query<AttemptRow[]>(
    `SELECT ${ATTEMPT_COLUMNS} FROM attempts WHERE ${where} ORDER BY lease_expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
    args,
  );
  return rows;
}

/** applicationsDue(limit) → applications with due sweep work (an expired live attempt, a WAITING
 * task past its deadline — waiting_tasks' deadline index — or a LEASED attempt whose task is: the
 * LEASED attempts, few and short-lived, each with its task by primary key): a non-locking read,
 * at most `limit` rows per kind; each application is then swept in its own transaction, which
 * re-checks everything under lock. */
export async function applicationsDue(pool: Pool, limit: number): Promise<string[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT DISTINCT application_id FROM (
       (SELECT application_id FROM attempts WHERE state IN ('LEASED','RUNNING') AND lease_expires_at <= UTC_TIMESTAMP(3) LIMIT ${limit})
       UNION ALL
       (SELECT application_id FROM waiting_tasks WHERE deadline_at <= UTC_TIMESTAMP(3) LIMIT ${limit})
       UNION ALL
       (SELECT a.application_id FROM attempts a JOIN tasks t ON t.id = a.task_id
         WHERE a.state = 'LEASED' AND t.deadline_at <= UTC_TIMESTAMP(3) LIMIT ${limit})
     ) due`,
  );
  return rows.map((r) => r.application_id as string);
}

/** `AND id = ?` when the sweep retries one row alone (dispatch/sweeper.ts), else nothing. */
const onlyRow = (id: string | undefined): [string, string[]] => (id === undefined ? ['', []] : [' AND id = ?', [id]]);

/** lockExpiredAttempts(application_id, limit, only?) → LEASED and RUNNING attempts of the
 * application whose lease ran out (database clock), locked SKIP LOCKED; with `only`, at most that
 * attempt. */
export async function lockExpiredAttempts(c: Tx, applicationId: string, limit: number, only?: string): Promise<AttemptRow[]> {
  const [and, arg] = onlyRow(only);
  return lockAttempts(c, `application_id = ? AND state IN ('LEASED','RUNNING') AND lease_expires_at <= UTC_TIMESTAMP(3)${and}`, [applicationId, ...arg], limit);
}

/** lockLateLeasedAttempts(application_id, limit, only?) → LEASED (never started) attempts with a
 * live lease whose task passed its deadline, locked SKIP LOCKED; with `only`, at most that attempt.
 * RUNNING ones are left to finish. */
export async function lockLateLeasedAttempts(c: Tx, applicationId: string, limit: number, only?: string): Promise<AttemptRow[]> {
  const [and, arg] = onlyRow(only);
  return lockAttempts(
    c,
    `application_id = ? AND state = 'LEASED' AND lease_expires_at > UTC_TIMESTAMP(3)${and}
         AND EXISTS (SELECT 1 FROM tasks t WHERE t.id = attempts.task_id AND t.state = 'LEASED' AND t.deadline_at <= UTC_TIMESTAMP(3))`,
    [applicationId, ...arg],
    limit,
  );
}

/** lockOverdueWaitingTasks(application_id, limit, only?) → id and namespace of WAITING tasks past
 * their deadline, soonest deadline first (waiting_tasks' deadline index), their task rows locked
 * SKIP LOCKED in the same statement; with `only`, at most that task. */
export async function lockOverdueWaitingTasks(c: Tx, applicationId: string, limit: number, only?: string): Promise<{ id: string; namespace_id: string }[]> {
  const [and, arg] = only === undefined ? ['', []] : [' AND task_id = ?', [only]];
  const [waiting] = await c.query<RowDataPacket[]>(
    `SELECT t.id, t.namespace_id FROM (
       SELECT task_id, deadline_at FROM waiting_tasks
        WHERE deadline_at <= UTC_TIMESTAMP(3) AND application_id = ?${and} ORDER BY deadline_at LIMIT ${limit}
     ) w JOIN tasks t ON t.id = w.task_id
      WHERE t.state = 'WAITING' ORDER BY w.deadline_at FOR UPDATE SKIP LOCKED`,
    [applicationId, ...arg],
  );
  return waiting.map((w) => ({ id: w.id as string, namespace_id: w.namespace_id as string }));
}

/** lockLeasedAttemptsOfWorker({namespace_id, worker_id}, ids) → those of the listed attempts that
 * belong to this worker identity and are still LEASED (never started), locked SKIP LOCKED: claims
 * whose session drained or closed before delivery, released at once. */
export async function lockLeasedAttemptsOfWorker(c: Tx, who: { namespaceId: string; workerId: string }, attemptIds: string[]): Promise<AttemptRow[]> {
  return lockAttempts(
    c,
    `id IN (${placeholders(attemptIds.length)}) AND namespace_id = ? AND worker_id = ? AND state = 'LEASED'`,
    [...attemptIds, who.namespaceId, who.workerId],
    attemptIds.length,
  );
}
