// The sweeper's workflow duties: signal timeouts, and READY steps that now fit the quota. Each run
// is advanced in its own transaction and re-checked under its lock, since the reads that found it
// take none: when several nodes' sweepers find the same run, the second finds nothing to do.
import { isConnectionError, withTransaction, type Tx, type Pool } from '../db/pool.js';
import { getRun } from '../db/workflow-runs.js';
import { dueSignalSteps, quotaReadyApplications, quotaReadyRuns } from '../db/workflow-run-steps.js';
import { withLedger } from '../dispatch/ledger.js';
import { isFinal, planSignalTimeout, planStartReady, type Plan } from './advance.js';
import { advanceRunsInTx, planAndApply } from './apply.js';
import { loadRun, type LoadedRun } from './run-state.js';

export interface WorkflowSweepReport {
  queues: string[];
  /** A run that fails stays behind alone for the next tick instead of stopping the runs after it. */
  failed: { runId: string; err: unknown }[];
}

/** Whether the plan created tasks (whose queues it reports); null when the run failed. A lost
 * database is thrown: the tick ends. */
async function advanceOne(
  pool: Pool,
  at: { namespace_id: string; run_id: string },
  plan: (run: LoadedRun, taskRoom?: number) => Plan,
  report: WorkflowSweepReport,
): Promise<boolean | null> {
  try {
    return await withTransaction(pool, 'sweep', async (c: Tx) => {
      const row = await getRun(c, at.namespace_id, at.run_id, 'update');
      if (!row || isFinal(row.state)) return false;
      const run = await loadRun(c, row);
      const { value: r } = await withLedger(c, advanceRunsInTx, (ledger) => planAndApply(c, ledger, run, (room) => plan(run, room)));
      report.queues.push(...r.queues);
      return r.queues.length > 0;
    });
  } catch (err) {
    if (isConnectionError(err)) throw err;
    report.failed.push({ runId: at.run_id, err });
    return null;
  }
}

export async function sweepWorkflows(pool: Pool, limit = 100): Promise<WorkflowSweepReport> {
  const report: WorkflowSweepReport = { queues: [], failed: [] };
  for (const s of await dueSignalSteps(pool, limit)) {
    await advanceOne(pool, s, (run, room) => planSignalTimeout(run.version.graph, run.view, s.step_key, room), report);
  }
  // Oldest run first per application: once one does not fit, the younger runs wait too, so the
  // room that appears goes to the oldest. Each application is read apart, so one whose quota is
  // full never crowds another's runs out of the read.
  for (const applicationId of await quotaReadyApplications(pool, limit)) {
    for (const r of await quotaReadyRuns(pool, applicationId, limit)) {
      const started = await advanceOne(pool, r, (run, room) => planStartReady(run.version.graph, run.view, room), report);
      if (started === false) break;
    }
  }
  return report;
}
