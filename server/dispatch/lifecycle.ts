// renew, and the task transitions shared by results, cancels and the sweeper. start and result
// frames are applied in batches by frame-batches.ts; what a result decides is result-decision.ts.
import { OrbitError } from '@orbit/protocol/errors';
import type { TerminalTaskState } from '@orbit/protocol/states';
import { ID_RE } from '@orbit/protocol/validation';
import { withTransaction, toIso, type Conn, type Pool } from '../db/pool.js';
import type { TaskRow } from '../db/tasks.js';
import { lockLiveCredential } from '../db/credentials.js';
import { attemptQueues } from '../db/attempt-batches.js';
import { readLiveLeases, renewLeases } from '../db/attempt-leases.js';
import { finishTaskRow } from '../db/task-transitions.js';
import { leaveWaiting } from '../db/waiting-tasks.js';
import { queueConfigs } from '../db/queue-config.js';
import type { PermitLedger } from './ledger.js';
import { OUTCOME_EVENT } from './events.js';
import type { Identity } from './frame-batches.js';

export type { Identity } from './frame-batches.js';

/** `renew`: extends each live, unexpired attempt of this worker identity to now + lease. */
export async function renewAttempts(
  pool: Pool,
  who: Identity,
  ids: string[],
  knownQueues: ReadonlyMap<string, string> = new Map(),
): Promise<{ leases: { attempt_id: string; lease_expires_at: string }[]; lost: string[] }> {
  const valid = [...new Set(ids.filter((id) => ID_RE.test(id)))];
  if (valid.length === 0) return { leases: [], lost: ids };
  return withTransaction(pool, async (c) => {
    // Refused inside the transaction when the session's credential was revoked (share lock: see
    // lockLiveCredential).
    if (!(await lockLiveCredential(c, who.credentialId))) throw new OrbitError('UNAUTHENTICATED', 'credential revoked');
    // Lease lengths from the cached queue configuration, as literals: joining queues here took a
    // shared lock on the queue row, which deadlocked with results releasing permits on it.
    const queueOf = await attemptQueues(c, valid, knownQueues);
    const lease = [...(await queueConfigs(c, queueOf.values()))].map(([q, v]) => [q, v.leaseSeconds] as const);
    await renewLeases(c, who, valid, lease);
    const rows = await readLiveLeases(c, who, valid);
    const ok = new Map(rows.map((r) => [r.id, toIso(r.lease_expires_at)!]));
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
  r: {
    state: TerminalTaskState | 'NEEDS_REVIEW';
    outcome: string;
    output?: string | null;
    error?: { code: string; message: string } | null;
    attemptsMade?: number;
  },
): Promise<void> {
  const terminal = r.state !== 'NEEDS_REVIEW';
  await finishTaskRow(c, t.id, {
    state: r.state,
    attemptsMade: r.attemptsMade ?? t.attempts_made,
    outcome: r.outcome,
    output: r.output ?? null,
    errorCode: r.error?.code ?? null,
    errorMessage: r.error?.message ?? null,
    terminal,
  });
  // A WAITING task (cancel, deadline) is no longer claimable.
  if (t.state === 'WAITING') await leaveWaiting(c, [t]);
  if (terminal) ledger.taskFinished(t.application_id);
  ledger.taskChanged(t);
  const result: Record<string, unknown> = { outcome: r.outcome };
  if (r.output) result.output = JSON.parse(r.output);
  if (r.error) result.error = r.error;
  ledger.event({ namespaceId: t.namespace_id, type: OUTCOME_EVENT[r.outcome]!, taskId: t.id, queueId: t.queue_id, result });
}
