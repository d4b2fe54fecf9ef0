// The applier writes a Plan inside the caller's transaction and decides nothing. Tasks are created
// last, through the one task-creation path, whose (run, step, index) row refuses a second one. The
// plan is tried whole against the quota; refused, everything is rolled back to a savepoint and the
// event is planned again with room 0 (docs/design.md "Workflows").
import { OrbitError } from '@orbit/protocol/errors';
import { isFinishedStepState } from '@orbit/protocol/states';
import type { Conn, Tx } from '../db/pool.js';
import { getAttempt } from '../db/attempts.js';
import { lockRuns, setRunState } from '../db/workflow-runs.js';
import { writeRunSteps, type StepWrite } from '../db/workflow-run-steps.js';
import { readStepTasks, type StepTaskRow } from '../db/workflow-step-tasks.js';
import { consumeSignals, insertSignal } from '../db/workflow-signals.js';
import { PermitLedger } from '../dispatch/ledger.js';
import { endTasks } from '../dispatch/lifecycle.js';
import { revokeAttempts, type Revoked } from '../dispatch/revoke.js';
import { getTask, type TaskRow } from '../db/tasks.js';
import { createStepTasksInTransaction, type SubmitCommand } from '../dispatch/submit.js';
import { planTasksChanged, type Plan } from './advance.js';
import type { StepTaskView } from './decide.js';
import { loadRun, type LoadedRun } from './run-state.js';
import { groupBy } from '../group-by.js';

export interface Applied {
  /** Their sessions get task.cancel after the commit. */
  revoked: Revoked[];
  /** Queues that got new tasks, to wake after the commit. */
  queues: string[];
}

export class QuotaRefused extends Error {}

export function taskViews(rows: StepTaskRow[]): Map<string, StepTaskView[]> {
  return groupBy(
    rows,
    (r) => r.step_key,
    (r) => {
      const v: StepTaskView = { index: Number(r.item_index), state: r.state };
      if (r.result_output !== null) v.output = JSON.parse(r.result_output);
      if (r.result_error_code) v.error = { code: r.result_error_code, message: r.result_error_message ?? '' };
      return v;
    },
  );
}

export async function planAndApply(c: Tx, ledger: PermitLedger, run: LoadedRun, plan: (taskRoom?: number) => Plan): Promise<Applied> {
  try {
    return await applyPlan(c, ledger, run, plan());
  } catch (err) {
    if (!(err instanceof QuotaRefused)) throw err;
  }
  return applyPlan(c, ledger, run, plan(0));
}

let savepoints = 0;

/** `run` is locked by the caller; `reason` is the text of a run cancel. */
export async function applyPlan(c: Tx, ledger: PermitLedger, run: LoadedRun, plan: Plan, reason?: string): Promise<Applied> {
  const creates = plan.changes.flatMap((ch) => (ch.state === 'ACTIVE' && ch.started ? [ch] : []));
  const sp = creates.length > 0 ? `wf_apply_${++savepoints % 1000}` : null;
  if (sp) await c.query(`SAVEPOINT ${sp}`);
  // Merged into the caller's ledger only when the plan applied: a refused quota must roll back
  // what the cancels counted too. Never flushed itself: the caller writes the hot rows at its end,
  // in the lock order.
  const sub = new PermitLedger();
  const revoked = await cancelTasks(c, sub, run, plan, reason);
  await writeRunSteps(c, stepWrites(run, plan));
  await writeSignals(c, run, plan);
  if (plan.run !== run.row.state || plan.changes.length > 0)
    await setRunState(c, run.row.id, plan.run, plan.run === 'CANCELLED' && run.row.state !== 'CANCELLED' ? (reason ?? null) : null);
  let queues: string[] = [];
  if (sp) {
    const items = creates.flatMap((ch) => ch.tasks.map((t) => stepTaskCommand(run, ch.key, t)));
    try {
      const r = await createStepTasksInTransaction(c, items);
      const refused = r.outcomes.find((o) => !o.ok);
      if (refused && !refused.ok) throw refused.error;
      queues = r.queues;
    } catch (err) {
      if (!(err instanceof OrbitError) || err.code !== 'QUOTA_EXCEEDED') throw err;
      await c.query(`ROLLBACK TO SAVEPOINT ${sp}`);
      throw new QuotaRefused();
    }
  }
  // The tasks this plan cancelled are decided by this plan.
  sub.stepTasks.splice(0);
  ledger.merge(sub);
  for (const q of queues) ledger.freedQueues.add(q);
  // A second plan in this transaction reads the state this one decided.
  run.row.state = plan.run;
  return { revoked, queues };
}

/** The run's credential: every queue of the version was authorized when the run started. No
 * receipt: the (run, step, index) row is the task's identity. */
function stepTaskCommand(run: LoadedRun, step: string, t: Extract<Plan['changes'][number], { tasks: unknown }>['tasks'][number]): SubmitCommand {
  const f = t.task;
  return {
    credential: { id: run.row.created_by, namespaceId: run.row.namespace_id, applicationId: run.row.application_id, queueIds: '*' },
    key: null,
    prepared: {
      normalized: {
        ...f,
        business_key: f.business_key,
        concurrency_key: f.concurrency_key,
        payload: undefined,
        not_before: undefined,
      },
      payloadJson: t.payloadJson,
      notBeforeMs: undefined,
    },
    workflow: { runId: run.row.id, step, index: t.index, delaySeconds: t.delay_seconds },
  };
}

/** A LEASED task's attempt is locked without waiting, after the task: a held row fails the
 * statement and the transaction runs again. A task that moved on is left alone. */
async function cancelTasks(c: Tx, ledger: PermitLedger, run: LoadedRun, plan: Plan, reason?: string): Promise<Revoked[]> {
  if (plan.cancel.length === 0) return [];
  const revoked: Revoked[] = [];
  const message = reason ?? (plan.run === 'CANCELLED' ? 'workflow run cancelled' : 'a task of the step failed');
  const waiting: { t: TaskRow; end: 'cancel'; reason: string }[] = [];
  for (const id of await cancelledTaskIds(c, run, plan)) {
    const t = (await getTask(c, run.row.namespace_id, id, 'update'))!;
    if (t.state === 'WAITING') {
      waiting.push({ t, end: 'cancel', reason: message });
    } else if (t.state === 'LEASED' && t.current_attempt_id && plan.run === 'CANCELLED') {
      const a = (await getAttempt(c, t.namespace_id, t.current_attempt_id, 'nowait'))!;
      revoked.push(...(await revokeAttempts(c, ledger, [{ a, kind: 'cancel', reason: message }])));
    }
  }
  await endTasks(c, ledger, waiting);
  return revoked;
}

function stepWrites(run: LoadedRun, plan: Plan): StepWrite[] {
  const out = new Map<string, StepWrite>();
  for (const ch of plan.changes) {
    const prev: StepWrite = out.get(ch.key) ?? run.steps.get(ch.key)!;
    const w: StepWrite = { ...prev, state: ch.state, ready_cause: null };
    if ('started' in ch && ch.started) w.started_at = 'now';
    switch (ch.state) {
      case 'READY':
        w.ready_cause = ch.cause;
        break;
      case 'SKIPPED':
        w.skipped_because = ch.skipped_because;
        break;
      case 'ACTIVE':
        if (ch.started) w.task_count = ch.tasks.length;
        break;
      case 'WAITING_SIGNAL':
        w.signal_deadline_at = { seconds: ch.timeout_seconds };
        break;
      case 'SUCCEEDED': {
        const step = run.version.steps[run.version.graph.index.get(ch.key)!]!;
        // A for_each step's output is read from its tasks in element order (not stored).
        w.output = step.for_each !== undefined ? null : JSON.stringify(ch.output === undefined ? null : ch.output);
        break;
      }
      case 'FAILED':
        w.error_code = ch.error.code;
        w.error_message = ch.error.message;
        break;
    }
    if (isFinishedStepState(ch.state)) Object.assign(w, { finished_at: 'now', signal_deadline_at: null } satisfies Partial<StepWrite>);
    out.set(ch.key, w);
  }
  return [...out.values()];
}

async function writeSignals(c: Conn, run: LoadedRun, plan: Plan): Promise<void> {
  const consumedKept: string[] = [];
  for (const ch of plan.changes) {
    if (ch.state !== 'SUCCEEDED' || ch.consumed_signal === undefined) continue;
    if (Object.prototype.hasOwnProperty.call(run.view.kept, ch.consumed_signal)) consumedKept.push(ch.consumed_signal);
    else await insertSignal(c, run.row, { name: ch.consumed_signal, stepKey: ch.key, payload: ch.output, state: 'CONSUMED' });
  }
  await consumeSignals(c, run.row.id, consumedKept);
  if (plan.keep) {
    const key = run.version.steps.find((s) => s.signal?.name === plan.keep!.name)!.key;
    await insertSignal(c, run.row, { name: plan.keep.name, stepKey: key, payload: plan.keep.payload, state: 'KEPT' });
  }
}

/**
 * Advances the runs of the step tasks `ledger` saw change, in the same transaction. The runs are
 * locked after the tasks, which the caller holds; called before the ledger's hot rows are written.
 * Returns the queues that got new tasks. Without step tasks it runs no statement.
 */
export async function advanceRunsInTx(c: Tx, ledger: PermitLedger): Promise<string[]> {
  if (ledger.stepTasks.length === 0) return [];
  const changed = ledger.stepTasks.splice(0);
  const byRun = new Map<string, Set<string>>();
  for (const t of changed) byRun.set(t.runId, (byRun.get(t.runId) ?? new Set()).add(t.step));
  const queues: string[] = [];
  for (const row of await lockRuns(c, [...byRun.keys()])) {
    const run = await loadRun(c, row);
    const keys = [...byRun.get(row.id)!];
    let updates = await stepTaskStates(c, row.id, keys);
    // The tasks a plan cancels were read without a lock: a claim may take one meanwhile. They are
    // locked first, in id order, and the plan made again on what is then settled, so a step never
    // finishes while a task it counted as cancelled runs.
    const p = planTasksChanged(run.version.graph, run.view, updates);
    if (p.cancel.length > 0) {
      for (const id of (await cancelledTaskIds(c, run, p)).sort()) await getTask(c, row.namespace_id, id, 'update');
      updates = await stepTaskStates(c, row.id, keys);
    }
    const r = await planAndApply(c, ledger, run, (room) => planTasksChanged(run.version.graph, run.view, updates, room));
    queues.push(...r.queues);
  }
  ledger.stepTasks.splice(0);
  return queues;
}

/** Outputs are read only for steps whose tasks all succeeded: a large fan-out reads its states at
 * every element's result, its outputs once. */
async function stepTaskStates(c: Conn, runId: string, keys: string[]): Promise<{ key: string; tasks: StepTaskView[] }[]> {
  const views = taskViews(await readStepTasks(c, runId, keys, false));
  const done = keys.filter((k) => (views.get(k) ?? []).every((t) => t.state === 'SUCCEEDED') && views.has(k));
  if (done.length > 0) for (const [k, v] of taskViews(await readStepTasks(c, runId, done, true))) views.set(k, v);
  return keys.map((key) => ({ key, tasks: views.get(key) ?? [] }));
}

/** The ids of the tasks `plan` cancels, in the plan's order. */
async function cancelledTaskIds(c: Conn, run: LoadedRun, plan: Plan): Promise<string[]> {
  const keys = plan.cancel.map((x) => x.key);
  const rows = await readStepTasks(c, run.row.id, keys, false);
  const ids = new Map(rows.map((r) => [`${r.step_key}/${r.item_index}`, r.task_id]));
  return plan.cancel.flatMap((x) => x.indexes.map((i) => ids.get(`${x.key}/${i}`)!));
}
