// The sweeper: lease expiry and deadlines settled by database time, without a worker result. Each
// batch is one transaction per application; rows are locked with SKIP LOCKED so several nodes'
// sweepers share the work instead of waiting on each other. Each attempt is revoked by revoke.ts.
import { isConnectionError, isDatabaseRefusal, withTransaction, type Pool } from '../db/pool.js';
import { applicationsDue, lockExpiredAttempts, lockLateLeasedAttempts, lockOverdueWaitingTasks } from '../db/sweep-sql.js';
import { lockTasks } from '../db/tasks.js';
import { withLedgerTx, type StepAdvancer } from './ledger.js';
import { endTasks } from './lifecycle.js';
import { revokeAttempts, type Revoked } from './revoke.js';

export interface SweepReport {
  revoked: Revoked[];
  freedQueues: string[];
  /** By orbit_sweeper_recovered_total's `kind`. */
  counts: Record<'leased_expired' | 'running_expired' | 'deadline_leased' | 'deadline_waiting', number>;
  /** What this sweep could not settle: an application (row null) or one row of it, with why. */
  failed: { applicationId: string; row: SweepRow | null; err: unknown }[];
}

/** A row a sweep found due: an expired attempt, a late LEASED attempt or an overdue WAITING task. */
export interface SweepRow {
  kind: 'expired' | 'late' | 'waiting';
  id: string;
}

const emptyReport = (): SweepReport => ({
  revoked: [],
  freedQueues: [],
  counts: { leased_expired: 0, running_expired: 0, deadline_leased: 0, deadline_waiting: 0 },
  failed: [],
});

function mergeInto(into: SweepReport, r: SweepReport): void {
  into.revoked.push(...r.revoked);
  into.freedQueues.push(...r.freedQueues.filter((q) => !into.freedQueues.includes(q)));
  for (const k of Object.keys(into.counts) as (keyof SweepReport['counts'])[]) into.counts[k] += r.counts[k];
  into.failed.push(...r.failed);
}

/** One sweep by database time: each application with due work in its own transaction, at most
 * `limit` rows per kind. A batch that fails for another reason than the database is swept again row
 * by row, so a row that cannot be settled stays behind alone (in `failed`). */
export async function sweep(pool: Pool, advance: StepAdvancer, limit = 200): Promise<SweepReport> {
  const report = emptyReport();
  for (const app of await applicationsDue(pool, limit)) {
    try {
      mergeInto(report, await sweepApplication(pool, advance, app, limit));
    } catch (err) {
      if (isConnectionError(err)) throw err;
      report.failed.push({ applicationId: app, row: null, err });
    }
  }
  return report;
}

async function sweepApplication(pool: Pool, advance: StepAdvancer, applicationId: string, limit: number): Promise<SweepReport> {
  try {
    return await sweepRows(pool, advance, applicationId, limit);
  } catch (err) {
    // A busy database is no bad row: running each row alone would only load it more.
    if (isDatabaseRefusal(err)) throw err;
    // Every due row of the application (the same locking reads, nothing written), then each alone.
    const rows = await dueRows(pool, applicationId, limit);
    if (rows.length <= 1) throw err;
    const report = emptyReport();
    for (const row of rows) {
      try {
        mergeInto(report, await sweepRows(pool, advance, applicationId, 1, row));
      } catch (e) {
        if (isDatabaseRefusal(e)) throw e;
        report.failed.push({ applicationId, row, err: e });
      }
    }
    return report;
  }
}

/** The rows one sweep of the application would take (its locking reads; nothing written). */
async function dueRows(pool: Pool, applicationId: string, limit: number): Promise<SweepRow[]> {
  return withTransaction(pool, 'sweep', async (c) => [
    ...(await lockExpiredAttempts(c, applicationId, limit)).map((a) => ({ kind: 'expired' as const, id: a.id })),
    ...(await lockLateLeasedAttempts(c, applicationId, limit)).map((a) => ({ kind: 'late' as const, id: a.id })),
    ...(await lockOverdueWaitingTasks(c, applicationId, limit)).map((w) => ({ kind: 'waiting' as const, id: w.id })),
  ]);
}

/** One transaction of the sweep of an application: its due rows, or only `only`. */
async function sweepRows(pool: Pool, advance: StepAdvancer, applicationId: string, limit: number, only?: SweepRow): Promise<SweepReport> {
  const report = emptyReport();
  const pick = (kind: SweepRow['kind']) => (only === undefined ? undefined : only.kind === kind ? only.id : null);
  const { ledger: committed } = await withLedgerTx(pool, 'sweep', advance, async (c, ledger) => {
    report.revoked = [];
    const expiredId = pick('expired');
    const expired = expiredId === null ? [] : await lockExpiredAttempts(c, applicationId, limit, expiredId);
    const expiredEnds = expired.map((a) => ({ a, kind: a.state === 'LEASED' ? ('expire-leased' as const) : ('expire-running' as const) }));
    report.revoked.push(...(await revokeAttempts(c, ledger, expiredEnds)));
    report.counts.leased_expired = expired.filter((a) => a.state === 'LEASED').length;
    report.counts.running_expired = expired.length - report.counts.leased_expired;
    // LEASED attempts whose task passed its deadline are cancelled; RUNNING ones may finish.
    const lateId = pick('late');
    const late = lateId === null ? [] : await lockLateLeasedAttempts(c, applicationId, limit, lateId);
    const lateEnds = late.map((a) => ({ a, kind: 'deadline' as const }));
    report.revoked.push(...(await revokeAttempts(c, ledger, lateEnds)));
    report.counts.deadline_leased = late.length;
    const waitingId = pick('waiting');
    const waiting = waitingId === null ? [] : await lockOverdueWaitingTasks(c, applicationId, limit, waitingId);
    const keys = waiting.map((w) => ({ namespace_id: w.namespace_id, task_id: w.id }));
    const rows = await lockTasks(c, keys);
    const overdue = waiting.map((w) => ({ t: rows.get(w.id)!, end: 'deadline' as const }));
    await endTasks(c, ledger, overdue);
    report.counts.deadline_waiting = waiting.length;
  });
  report.freedQueues = [...committed.freedQueues];
  return report;
}
