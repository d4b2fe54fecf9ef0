// renew, and the task transitions shared by results, cancels and the sweeper. start and result
// frames are applied in batches by frame-batches.ts; what a result decides is outcome.ts.
import type { RowDataPacket } from 'mysql2/promise';
import { OrbitError } from '@orbit/protocol/errors';
import { ID_RE } from '@orbit/protocol/validation';
import { withTransaction, toIso, type Conn, type Pool } from '../db/pool.js';
import type { TaskRow } from '../db/tasks.js';
import { TASK_COLUMNS } from '../db/tasks.js';
import { lockLiveCredential } from '../db/credentials.js';
import { attemptQueues } from '../db/attempt-batches.js';
import { queueConfigs } from '../db/queue-config.js';
import type { PermitLedger } from './ledger.js';
import { OUTCOME_EVENT } from './events.js';
import type { Identity } from './frame-batches.js';

export type { Identity } from './frame-batches.js';

async function lockTask(c: Conn, namespaceId: string, taskId: string): Promise<TaskRow> {
  const [rows] = await c.execute<(TaskRow & RowDataPacket)[]>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ? AND namespace_id = ? FOR UPDATE`, [taskId, namespaceId]);
  return rows[0]!;
}

/** `renew`: extends each live, unexpired attempt of this worker identity to now + lease. */
export async function renewAttempts(pool: Pool, who: Identity, ids: string[], knownQueues: ReadonlyMap<string, string> = new Map()): Promise<{ leases: { attempt_id: string; lease_expires_at: string }[]; lost: string[] }> {
  const valid = [...new Set(ids.filter((id) => ID_RE.test(id)))];
  if (valid.length === 0) return { leases: [], lost: ids };
  const placeholders = valid.map(() => '?').join(',');
  return withTransaction(pool, async (c) => {
    // Refused inside the transaction when the session's credential was revoked (share lock: see
    // lockLiveCredential).
    if (!(await lockLiveCredential(c, who.credentialId))) throw new OrbitError('UNAUTHENTICATED', 'credential revoked');
    // Lease lengths from the cached queue configuration, as literals: joining queues here took a
    // shared lock on the queue row, which deadlocked with results releasing permits on it.
    const queueOf = await attemptQueues(c, valid, knownQueues);
    const lease = [...(await queueConfigs(c, queueOf.values()))].map(([q, v]) => [q, v.leaseSeconds] as const);
    if (lease.length > 0) {
      await c.query(
        `UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL (CASE queue_id ${lease.map(() => 'WHEN ? THEN ?').join(' ')} END) SECOND
          WHERE id IN (${placeholders}) AND namespace_id = ? AND worker_id = ? AND queue_id IN (${lease.map(() => '?').join(',')})
            AND state IN ('LEASED','RUNNING') AND lease_expires_at > UTC_TIMESTAMP(3)`,
        [...lease.flat(), ...valid, who.namespaceId, who.workerId, ...lease.map(([q]) => q)],
      );
    }
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
