// The grant of leases for the candidate rows a claim round chose.
import type { AssignedTask } from '@orbit/protocol/frames';
import { toIso, type Tx } from '../db/pool.js';
import { insertAttempts, markTasksLeased, type CandidateRow, type NewAttempt } from '../db/claim-sql.js';
import { taskWorkflowRef } from '../db/tasks.js';
import { dbTimeToMs, msToDbTime } from '../db/time.js';
import type { Identity } from './frame-commands.js';

export interface ClaimSession extends Identity {
  applicationId: string;
  sessionId: string;
  queueIds: string[];
  handlers: { handler: string; versions: string[] }[] | null;
  concurrencyKeys: boolean;
}

export interface Assignment {
  attemptId: string;
  attemptNo: number;
  leaseExpiresAt: string;
  queueId: string;
  concurrencyToken: string | null;
  task: Omit<AssignedTask, 'payload'>;
  /** The stored payload JSON, spliced into the frame without being parsed again. */
  payloadJson: string;
}

/** Whether session `s` takes task `t`: queue, handler version, and capability for a keyed task. */
export function sessionAccepts(
  s: ClaimSession,
  t: Pick<CandidateRow, 'namespace_id' | 'queue_id' | 'handler' | 'handler_version' | 'concurrency_key'>,
): boolean {
  return (
    s.namespaceId === t.namespace_id &&
    s.queueIds.includes(t.queue_id) &&
    (t.concurrency_key === null || s.concurrencyKeys) &&
    (s.handlers === null || s.handlers.some((h) => h.handler === t.handler && h.versions.includes(t.handler_version)))
  );
}

/** A locked candidate row chosen for a session; `token` for a keyed task. */
export interface Grant {
  row: CandidateRow;
  session: ClaimSession;
  attemptId: string;
  token: string | null;
}

/** Inserts one attempt per grant, leased from `leasedAt` (database clock), and marks the tasks
 * LEASED. The caller holds the candidate rows. */
export async function leaseCandidates(c: Tx, grants: Grant[], leasedAt: string, leaseSeconds: (queueId: string) => number): Promise<Assignment[]> {
  if (grants.length === 0) return [];
  const nowMs = dbTimeToMs(leasedAt);
  const attempts: NewAttempt[] = grants.map((g) => ({
    id: g.attemptId,
    task_id: g.row.id,
    namespace_id: g.row.namespace_id,
    application_id: g.session.applicationId,
    queue_id: g.row.queue_id,
    attempt_no: g.row.attempts_created + 1,
    worker_id: g.session.workerId,
    session_id: g.session.sessionId,
    concurrency_key: g.row.concurrency_key,
    concurrency_token: g.token,
    leased_at: leasedAt,
    lease_expires_at: msToDbTime(nowMs + leaseSeconds(g.row.queue_id) * 1000),
  }));
  await insertAttempts(c, attempts);
  const leased = grants.map((g) => ({ taskId: g.row.id, attemptId: g.attemptId, waiting: g.row }));
  await markTasksLeased(c, leased, leasedAt);
  return grants.map((g, i) => {
    const a = attempts[i]!;
    return {
      attemptId: a.id,
      attemptNo: a.attempt_no,
      leaseExpiresAt: toIso(a.lease_expires_at)!,
      queueId: a.queue_id,
      concurrencyToken: g.token,
      task: assignedTask(g.row),
      payloadJson: typeof g.row.payload === 'string' ? g.row.payload : JSON.stringify(g.row.payload),
    };
  });
}

function assignedTask(row: CandidateRow): Assignment['task'] {
  const task: Assignment['task'] = {
    id: row.id,
    queue_id: row.queue_id,
    handler: row.handler,
    handler_version: row.handler_version,
    payload_version: row.payload_version,
    priority: row.priority,
    deadline_at: toIso(row.deadline_at)!,
  };
  if (row.business_key !== null) task.business_key = row.business_key;
  if (row.concurrency_key) task.concurrency_key = row.concurrency_key.toString('utf8');
  const wf = taskWorkflowRef(row);
  if (wf) task.workflow = wf;
  return task;
}
