// The sweeper's statements. Every locking read uses SKIP LOCKED, so nodes share the work; a row
// another transaction holds is left for the next sweep.
import type { RowDataPacket } from 'mysql2/promise';
import type { Tx, Pool } from './pool.js';
import { ATTEMPT_COLUMNS, type AttemptRow } from './attempts.js';
import { placeholders } from './placeholders.js';
import type { WorkerRef } from './attempt-leases.js';

async function lockAttempts(c: Tx, where: string, args: unknown[], limit: number): Promise<AttemptRow[]> {
  const [rows] = await c.query<AttemptRow[]>(
    `SELECT ${ATTEMPT_COLUMNS} FROM attempts WHERE ${where} ORDER BY lease_expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
    args,
  );
  return rows;
}

/** A non-locking read of applications with due work; each is then swept under lock. */
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

const onlyRow = (id: string | undefined): [string, string[]] => (id === undefined ? ['', []] : [' AND id = ?', [id]]);

export async function lockExpiredAttempts(c: Tx, applicationId: string, limit: number, only?: string): Promise<AttemptRow[]> {
  const [and, arg] = onlyRow(only);
  return lockAttempts(c, `application_id = ? AND state IN ('LEASED','RUNNING') AND lease_expires_at <= UTC_TIMESTAMP(3)${and}`, [applicationId, ...arg], limit);
}

/** LEASED attempts whose task passed its deadline; RUNNING ones are left to finish. */
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

/** Claims whose session closed before delivery, released at once. */
export async function lockLeasedAttemptsOfWorker(c: Tx, who: WorkerRef, attemptIds: string[]): Promise<AttemptRow[]> {
  return lockAttempts(
    c,
    `id IN (${placeholders(attemptIds.length)}) AND namespace_id = ? AND worker_id = ? AND state = 'LEASED'`,
    [...attemptIds, who.namespaceId, who.workerId],
    attemptIds.length,
  );
}
