// The run commands, each inside its receipt-bearing command transaction; each plans and applies.
// Lock order (docs/design.md "Workflows"): results and the sweeper hold attempts and tasks before
// they lock a run, so :cancel locks the LEASED tasks' attempts, then the tasks, then the run, and
// re-checks under the run lock. The other commands cancel no task and lock the run only.
import { OrbitError } from '@orbit/protocol/errors';
import type { WorkflowRun } from '@orbit/protocol/workflow-views';
import type { Tx } from '../db/pool.js';
import type { Credential } from '../db/credentials.js';
import { getAttempt } from '../db/attempts.js';
import { liveQueuesTouch } from '../db/queues.js';
import { applyChecked, NotApplied } from '../db/conditional-commit.js';
import { getWorkflow } from '../db/workflows.js';
import { getRun, insertRun, type RunRow } from '../db/workflow-runs.js';
import { writeRunSteps } from '../db/workflow-run-steps.js';
import { currentAttemptIds, lockTasksById, readStepTasks } from '../db/workflow-step-tasks.js';
import { signalSent } from '../db/workflow-signals.js';
import { withLedger } from '../dispatch/ledger.js';
import { unfinishedTasksQuota } from '../dispatch/refusals.js';
import type { Revoked } from '../dispatch/revoke.js';
import { newId } from '../ids.js';
import { initialRunView, isFinal, planCancel, planPause, planResume, planSignal, planStart } from './advance.js';
import { advanceRunsInTx, applyPlan, planAndApply, QuotaRefused, taskViews } from './apply.js';
import { findVersionGraph, loadRun, runView, type LoadedRun } from './run-state.js';
import type { NormalizedRunStart, NormalizedSignal } from './validate.js';

export interface RunEffect {
  run: WorkflowRun;
  queues: string[];
  revoked: Revoked[];
}

/** The root steps start in this transaction; their tasks must fit the quota, else nothing is created. */
export async function startRun(c: Tx, cred: Credential, workflowId: string, n: NormalizedRunStart): Promise<RunEffect> {
  // Shared: a retirement (FOR UPDATE, then its unfinished runs) and a start never both succeed.
  const wf = await getWorkflow(c, cred.namespaceId, workflowId, 'share');
  if (!wf) throw new OrbitError('NOT_FOUND', 'workflow not found');
  if (wf.retired_at) throw new OrbitError('RESOURCE_RETIRED', 'workflow is retired');
  const number = n.version ?? Number(wf.current_version);
  const version = await findVersionGraph(c, wf.id, number);
  if (!version) throw new OrbitError('NOT_FOUND', `workflow version ${number} not found`, { field: 'version' });
  const id = newId();
  const seq = await insertRun(c, {
    id,
    namespace_id: cred.namespaceId,
    application_id: cred.applicationId,
    workflow_id: wf.id,
    version: number,
    input: n.inputJson,
    concurrency_key: n.concurrency_key === undefined ? null : Buffer.from(n.concurrency_key, 'utf8'),
    created_by: cred.id,
  });
  const rows = version.steps.map((s) => ({
    run_id: id,
    step_key: s.key,
    namespace_id: cred.namespaceId,
    application_id: cred.applicationId,
    run_seq: seq,
    state: 'PENDING' as const,
    ready_cause: null,
    skipped_because: null,
    task_count: 0,
    output: null,
    error_code: null,
    error_message: null,
    signal_deadline_at: null,
    started_at: null,
    finished_at: null,
  }));
  await writeRunSteps(c, rows);
  // Every queue of the version, reached or not: a queue retirement locks the row and then looks for
  // unfinished runs that pin it, so the two never both succeed.
  if (version.queueIds.length > 0) {
    await applyChecked(c, [liveQueuesTouch([...version.queueIds])]).catch((err: unknown) => {
      throw err instanceof NotApplied ? new OrbitError('RESOURCE_RETIRED', 'a queue of the workflow version is retired', { field: 'version' }) : err;
    });
  }
  const row = (await getRun(c, cred.namespaceId, id))!;
  const run: LoadedRun = {
    row,
    version,
    steps: new Map(rows.map((r) => [r.step_key, { ...r, updated_at: row.created_at }])),
    view: initialRunView(version.graph, n.input, n.concurrency_key),
  };
  const { value: r } = await withLedger(c, advanceRunsInTx, (ledger) => applyPlan(c, ledger, run, planStart(version.graph, run.view))).catch(
    async (err: unknown) => {
      throw err instanceof QuotaRefused ? await unfinishedTasksQuota(c, cred.applicationId) : err;
    },
  );
  return finish(c, cred.namespaceId, run, r.queues, []);
}

async function lockedRun(c: Tx, namespaceId: string, runId: string): Promise<LoadedRun> {
  const row = await getRun(c, namespaceId, runId, 'update');
  if (!row) throw new OrbitError('NOT_FOUND', 'workflow run not found');
  if (isFinal(row.state)) throw new OrbitError('STATE_CONFLICT', `workflow run is ${row.state}`);
  return loadRun(c, row);
}

/** Read after the ledger was flushed. */
async function finish(c: Tx, ns: string, run: LoadedRun, queues: string[], revoked: Revoked[]): Promise<RunEffect> {
  return { run: await runView(c, (await getRun(c, ns, run.row.id)) as RunRow), queues, revoked };
}

export async function pauseRun(c: Tx, ns: string, runId: string): Promise<RunEffect> {
  const run = await lockedRun(c, ns, runId);
  await withLedger(c, advanceRunsInTx, (ledger) => applyPlan(c, ledger, run, planPause(run.version.graph, run.view)));
  return finish(c, ns, run, [], []);
}

export async function resumeRun(c: Tx, ns: string, runId: string): Promise<RunEffect> {
  const run = await lockedRun(c, ns, runId);
  const { value: r } = await withLedger(c, advanceRunsInTx, (ledger) => planAndApply(c, ledger, run, (room) => planResume(run.version.graph, run.view, room)));
  return finish(c, ns, run, r.queues, []);
}

export async function cancelRun(c: Tx, ns: string, runId: string, reason: string | undefined): Promise<RunEffect> {
  const open = (await readStepTasks(c, runId, null, false)).filter((t) => t.state === 'WAITING' || t.state === 'LEASED').map((t) => t.task_id);
  for (const a of await currentAttemptIds(c, open)) await getAttempt(c, ns, a, 'update');
  await lockTasksById(c, open);
  const run = await lockedRun(c, ns, runId);
  // Re-read under the run lock: an advancement that committed meanwhile may have created tasks,
  // which the applier locks as it cancels them (a WAITING task has no attempt).
  const updates = [...taskViews(await readStepTasks(c, runId, null, false))].map(([key, tasks]) => ({ key, tasks }));
  const { value: r } = await withLedger(c, advanceRunsInTx, (ledger) => applyPlan(c, ledger, run, planCancel(run.version.graph, run.view, updates), reason));
  return finish(c, ns, run, [], r.revoked);
}

export async function sendSignal(c: Tx, ns: string, runId: string, s: NormalizedSignal): Promise<RunEffect> {
  const run = await lockedRun(c, ns, runId);
  if (await signalSent(c, runId, s.name)) throw new OrbitError('STATE_CONFLICT', `signal ${s.name} was already sent to this run`, { field: 'name' });
  // The route refused a name no step of the run's version waits for: a run's version never changes.
  const g = run.version.graph;
  const first = planSignal(g, run.view, s.name, s.payload);
  if (first.outcome === 'late') throw new OrbitError('STATE_CONFLICT', `the step waiting for signal ${s.name} is already finished`, { field: 'name' });
  const { value: r } = await withLedger(c, advanceRunsInTx, (ledger) =>
    planAndApply(c, ledger, run, (room) => planSignal(g, run.view, s.name, s.payload, room).plan),
  );
  return finish(c, ns, run, r.queues, []);
}
