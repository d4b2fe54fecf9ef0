// The one grant path of dispatch.md: what a claim round (claim.ts), a key hand-off (handoff.ts)
// and a slot refill (refill.ts) share once each has chosen a locked candidate row for a session —
// which session may take which task (sessionAccepts), and the attempt, its lease end and the
// assigned task built from the row, the attempts inserted and the tasks LEASED (leaseCandidates).
// The callers differ only in how they choose (a round over many sessions, a key's successor, the
// next task of a freed slot's queue) and in how the permits move (taken, or carried over from the
// released attempt); the grant itself is written here once.
import type { AssignedTask } from '@orbit/protocol/frames';
import { toIso, type Tx } from '../db/pool.js';
import { insertAttempts, markTasksLeased, type CandidateRow, type NewAttempt } from '../db/claim-sql.js';
import { taskWorkflowRef } from '../db/tasks.js';
import { dbTimeToMs, msToDbTime } from '../db/time.js';

/** A session as the grant path sees it (Session.claim). */
export interface ClaimSession {
  namespaceId: string;
  applicationId: string;
  workerId: string;
  sessionId: string;
  /** Checked (share-locked) inside the claim transaction: a revoked credential gets nothing. */
  credentialId: string;
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
  /** The task of the task.assign frame but its payload, which is `payloadJson`. */
  task: Omit<AssignedTask, 'payload'>;
  /** The payload as stored (JSON text): spliced into the frame as it is (Session.deliver), not
   * parsed and serialized again for every assignment (issue 19). */
  payloadJson: string;
}

/** A payload column as JSON text (MariaDB returns the JSON column as text; a driver that parsed it
 * gets it serialized once). */
export function payloadText(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** What sessionAccepts asks of a task. */
export interface TaskToAccept {
  namespaceId: string;
  queueId: string;
  handler: string;
  handlerVersion: string;
  keyed: boolean;
}

/** Whether session `s` takes task `t`: it consumes the task's queue in its namespace, serves its
 * handler version (no handler list: every handler), and — for a keyed task — declared the
 * concurrency-key capability. The one rule of a claim round, a hand-off and a refill. */
export function sessionAccepts(s: ClaimSession, t: TaskToAccept): boolean {
  return (
    s.namespaceId === t.namespaceId &&
    s.queueIds.includes(t.queueId) &&
    (!t.keyed || s.concurrencyKeys) &&
    (s.handlers === null || s.handlers.some((h) => h.handler === t.handler && h.versions.includes(t.handlerVersion)))
  );
}

/** sessionAccepts for a candidate row. */
export const acceptsRow = (s: ClaimSession, row: CandidateRow): boolean =>
  sessionAccepts(s, {
    namespaceId: row.namespace_id,
    queueId: row.queue_id,
    handler: row.handler,
    handlerVersion: row.handler_version,
    keyed: row.concurrency_key !== null,
  });

/** A locked candidate row chosen for a session: its new attempt's id and, for a keyed task, the
 * fencing token granted in this transaction. */
export interface Grant {
  row: CandidateRow;
  session: ClaimSession;
  attemptId: string;
  token: string | null;
}

/** leaseCandidates(grants, leasedAt, leaseSeconds by queue) → the assignments, in the grants'
 * order: one attempt per grant inserted (attempt number = attempts created + 1, lease from
 * `leasedAt`, a database clock reading, plus the queue's lease), the tasks LEASED. Locks: the
 * candidate rows are already locked by the caller; the inserts take no other row lock. */
export async function leaseCandidates(c: Tx, grants: Grant[], leasedAt: string, leaseSeconds: (queueId: string) => number): Promise<Assignment[]> {
  if (grants.length === 0) return [];
  const nowMs = dbTimeToMs(leasedAt);
  const attempts: NewAttempt[] = grants.map((g) => ({
    id: g.attemptId,
    taskId: g.row.id,
    namespaceId: g.row.namespace_id,
    applicationId: g.session.applicationId,
    queueId: g.row.queue_id,
    attemptNo: g.row.attempts_created + 1,
    workerId: g.session.workerId,
    sessionId: g.session.sessionId,
    concurrencyKey: g.row.concurrency_key,
    token: g.token,
    leasedAt,
    leaseExpiresAt: msToDbTime(nowMs + leaseSeconds(g.row.queue_id) * 1000),
  }));
  await insertAttempts(c, attempts);
  await markTasksLeased(
    c,
    grants.map((g) => ({ taskId: g.row.id, attemptId: g.attemptId, waiting: g.row })),
    leasedAt,
  );
  return grants.map((g, i) => {
    const a = attempts[i]!;
    return {
      attemptId: a.id,
      attemptNo: a.attemptNo,
      leaseExpiresAt: toIso(a.leaseExpiresAt)!,
      queueId: a.queueId,
      concurrencyToken: g.token,
      task: assignedTask(g.row),
      payloadJson: payloadText(g.row.payload),
    };
  });
}

/** The task of a task.assign frame (but its payload) from a candidate row. */
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
