// Revoking live attempts without a worker result — lease expiry and deadlines (the sweeper,
// sweeper.ts), cancel (task-commands.ts, workflows), and never-started attempts released at
// reconnect (releaseAttempts) — in the caller's transaction, which holds the attempt rows. What
// each kind does to the attempt and its task is the lifecycle's table (lifecycle.ts ATTEMPT_ENDS).
import type { Pool, Tx } from '../db/pool.js';
import type { AttemptRow } from '../db/attempts.js';
import type { WorkerRef } from '../db/attempt-leases.js';
import { lockLeasedAttemptsOfWorker } from '../db/sweep-sql.js';
import { lockTasks } from '../db/tasks.js';
import { withLedgerTx, type PermitLedger, type StepAdvancer } from './ledger.js';
import { ATTEMPT_ENDS, endAttempts } from './lifecycle.js';

export type CancelReason = 'CANCELLED' | 'LEASE_EXPIRED' | 'DEADLINE_EXCEEDED';

export interface Revoked {
  attemptId: string;
  sessionId: string;
  reason: CancelReason;
}

/** The ends without a worker result; each session is told its table entry's error code. */
export type RevokeKind = 'expire-leased' | 'expire-running' | 'deadline' | 'cancel' | 'release-unlisted';

/** Revokes live attempts whose rows the caller has locked (their tasks locked after them). Returns what each session is told. */
export async function revokeAttempts(c: Tx, ledger: PermitLedger, list: { a: AttemptRow; kind: RevokeKind; reason?: string }[]): Promise<Revoked[]> {
  const attempts = list.map((x) => x.a);
  const tasks = await lockTasks(c, attempts);
  const ends = list.map(({ a, kind, reason }) => ({ a, t: tasks.get(a.task_id)!, end: kind, reason }));
  await endAttempts(c, ledger, ends, list[0]?.a.db_now);
  return list.map(({ a, kind }) => ({ attemptId: a.id, sessionId: a.session_id, reason: ATTEMPT_ENDS[kind].error.code }));
}

/** Releases live never-started attempts of one worker identity that were never delivered. */
export async function releaseAttempts(pool: Pool, advance: StepAdvancer, who: WorkerRef, attemptIds: string[]): Promise<string[]> {
  if (attemptIds.length === 0) return [];
  const { ledger } = await withLedgerTx(pool, 'other', advance, async (c, ledger) => {
    const rows = await lockLeasedAttemptsOfWorker(c, who, attemptIds);
    const unlisted = rows.map((a) => ({ a, kind: 'release-unlisted' as const }));
    await revokeAttempts(c, ledger, unlisted);
  });
  return [...ledger.freedQueues];
}
