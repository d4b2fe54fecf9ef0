// Revoking live attempts without a worker result: lease expiry (sweeper), deadlines, cancel, and
// never-started attempts released at reconnect. Each batch is one transaction; rows are locked
// with SKIP LOCKED so several nodes' sweepers share the work instead of waiting on each other.
import { withTransaction, type Conn, type Pool } from '../db/pool.js';
import { closeAttempt, type AttemptRow } from '../db/attempts.js';
import { applicationsDue, lockExpiredAttempts, lockLateLeasedAttempts, lockLeasedAttemptsOfWorker, lockOverdueWaitingTasks } from '../db/sweep-sql.js';
import { lockTask, requeueUnstartedTask } from '../db/task-transitions.js';
import { PermitLedger } from './ledger.js';
import { finishTask } from './lifecycle.js';

export type CancelReason = 'CANCELLED' | 'LEASE_EXPIRED' | 'DEADLINE_EXCEEDED';

export interface Revoked {
  attemptId: string;
  sessionId: string;
  reason: CancelReason;
}

export interface SweepReport {
  revoked: Revoked[];
  freedQueues: string[];
  counts: { leasedExpired: number; runningExpired: number; deadlineWaiting: number; deadlineLeased: number };
}

/** Revokes one live attempt whose row the caller has locked. `kind` decides attempt and task fate. */
export async function revokeAttempt(
  c: Conn,
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
      await requeueUnstartedTask(c, t.id, a.id);
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

/** One sweep by database time: every application with due work, each in its own transaction
 * (every transaction touches one application's rows: dispatch.md, "Scale-out"), at most `limit`
 * rows per kind and application. */
export async function sweep(pool: Pool, limit = 200): Promise<SweepReport> {
  const report: SweepReport = { revoked: [], freedQueues: [], counts: { leasedExpired: 0, runningExpired: 0, deadlineWaiting: 0, deadlineLeased: 0 } };
  for (const app of await applicationsDue(pool, limit)) {
    const r = await sweepApplication(pool, app, limit);
    report.revoked.push(...r.revoked);
    report.freedQueues.push(...r.freedQueues.filter((q) => !report.freedQueues.includes(q)));
    for (const k of Object.keys(report.counts) as (keyof SweepReport['counts'])[]) report.counts[k] += r.counts[k];
  }
  return report;
}

async function sweepApplication(pool: Pool, applicationId: string, limit: number): Promise<SweepReport> {
  let ledger = new PermitLedger();
  const report: SweepReport = { revoked: [], freedQueues: [], counts: { leasedExpired: 0, runningExpired: 0, deadlineWaiting: 0, deadlineLeased: 0 } };
  await withTransaction(pool, async (c) => {
    ledger = new PermitLedger(); // fresh on a deadlock retry
    report.revoked = [];
    report.counts = { leasedExpired: 0, runningExpired: 0, deadlineWaiting: 0, deadlineLeased: 0 };
    const expired = await lockExpiredAttempts(c, applicationId, limit);
    for (const a of expired) {
      const kind = a.state === 'LEASED' ? 'expire-leased' : 'expire-running';
      const reason = await revokeAttempt(c, ledger, a, kind);
      report.revoked.push({ attemptId: a.id, sessionId: a.session_id, reason });
      if (kind === 'expire-leased') report.counts.leasedExpired++;
      else report.counts.runningExpired++;
    }
    // LEASED attempts whose task passed its deadline are cancelled; RUNNING ones may finish.
    const late = await lockLateLeasedAttempts(c, applicationId, limit);
    for (const a of late) {
      const reason = await revokeAttempt(c, ledger, a, 'deadline');
      report.revoked.push({ attemptId: a.id, sessionId: a.session_id, reason });
      report.counts.deadlineLeased++;
    }
    const waiting = await lockOverdueWaitingTasks(c, applicationId, limit);
    for (const w of waiting) {
      const t = await lockTask(c, w.namespace_id, w.id);
      await finishTask(c, ledger, t, {
        state: 'DEADLINE_EXCEEDED',
        outcome: 'deadline_exceeded',
        error: { code: 'DEADLINE_EXCEEDED', message: 'task deadline passed while waiting' },
      });
      report.counts.deadlineWaiting++;
    }
    await ledger.flush(c);
  });
  report.freedQueues = [...ledger.freedQueues];
  return report;
}

/** Releases live never-started attempts of one worker identity that were never delivered. */
export async function releaseAttempts(pool: Pool, who: { namespaceId: string; workerId: string }, attemptIds: string[]): Promise<string[]> {
  if (attemptIds.length === 0) return [];
  let ledger = new PermitLedger();
  await withTransaction(pool, async (c) => {
    ledger = new PermitLedger();
    const rows = await lockLeasedAttemptsOfWorker(c, who, attemptIds);
    for (const a of rows) await revokeAttempt(c, ledger, a, 'release-unlisted');
    await ledger.flush(c);
  });
  return [...ledger.freedQueues];
}
