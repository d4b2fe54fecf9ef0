// Revoking a live attempt without a worker result — lease expiry and deadlines (the sweeper,
// sweeper.ts), cancel (task-commands.ts, workflows), and never-started attempts released at
// reconnect (releaseAttempts) — in the caller's transaction, which holds the attempt row.
import type { Pool, Tx } from '../db/pool.js';
import { closeAttempt, type AttemptRow } from '../db/attempts.js';
import { lockLeasedAttemptsOfWorker } from '../db/sweep-sql.js';
import { lockTask, requeueUnstartedTask } from '../db/task-transitions.js';
import { withLedgerTx, type PermitLedger, type StepAdvancer } from './ledger.js';
import { finishTask } from './finish-task.js';

export type CancelReason = 'CANCELLED' | 'LEASE_EXPIRED' | 'DEADLINE_EXCEEDED';

export interface Revoked {
  attemptId: string;
  sessionId: string;
  reason: CancelReason;
}

/** Revokes one live attempt whose row the caller has locked. `kind` decides attempt and task fate. */
export async function revokeAttempt(
  c: Tx,
  ledger: PermitLedger,
  a: AttemptRow,
  kind: 'expire-leased' | 'expire-running' | 'deadline' | 'cancel' | 'release-unlisted',
  reasonText?: string,
): Promise<CancelReason> {
  const t = await lockTask(c, a.namespace_id, a.task_id);
  ledger.releaseAttempt(a);
  switch (kind) {
    case 'expire-leased':
    case 'release-unlisted':
      await closeAttempt(c, a.id, {
        state: 'EXPIRED',
        outcome: null,
        errorCode: 'LEASE_EXPIRED',
        errorMessage: kind === 'release-unlisted' ? 'released unstarted: not resumed at reconnect, or never delivered' : 'lease ran out before start',
      });
      // A never-started attempt does not consume max_attempts: back to WAITING as it was.
      if (await requeueUnstartedTask(c, t.id, a.id)) ledger.enterWaiting(t);
      ledger.taskChanged(t);
      return 'LEASE_EXPIRED';
    case 'expire-running': {
      const error = { code: 'LEASE_EXPIRED', message: 'lease ran out while running; effect unknown' };
      await closeAttempt(c, a.id, { state: 'UNKNOWN', outcome: 'unknown', errorCode: error.code, errorMessage: error.message });
      await finishTask(c, ledger, t, { state: 'NEEDS_REVIEW', outcome: 'unknown', error });
      return 'LEASE_EXPIRED';
    }
    case 'deadline': {
      const error = { code: 'DEADLINE_EXCEEDED', message: 'task deadline passed before start' };
      await closeAttempt(c, a.id, { state: 'CANCELLED', outcome: null, errorCode: error.code, errorMessage: error.message });
      await finishTask(c, ledger, t, { state: 'DEADLINE_EXCEEDED', outcome: 'deadline_exceeded', error });
      return 'DEADLINE_EXCEEDED';
    }
    case 'cancel': {
      const error = { code: 'CANCELLED', message: reasonText ?? 'cancelled' };
      await closeAttempt(c, a.id, { state: 'CANCELLED', outcome: null, errorCode: error.code, errorMessage: error.message });
      await finishTask(c, ledger, t, { state: 'CANCELLED', outcome: 'cancelled', error });
      return 'CANCELLED';
    }
  }
}

/** Releases live never-started attempts of one worker identity that were never delivered. */
export async function releaseAttempts(
  pool: Pool,
  advance: StepAdvancer,
  who: { namespaceId: string; workerId: string },
  attemptIds: string[],
): Promise<string[]> {
  if (attemptIds.length === 0) return [];
  const { ledger } = await withLedgerTx(pool, 'other', advance, async (c, ledger) => {
    const rows = await lockLeasedAttemptsOfWorker(c, who, attemptIds);
    for (const a of rows) await revokeAttempt(c, ledger, a, 'release-unlisted');
  });
  return [...ledger.freedQueues];
}
