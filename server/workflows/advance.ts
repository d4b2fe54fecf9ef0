// The plan of one workflow event: from a run as its transaction read it and the event, the step
// changes, the tasks to create and cancel, and the run's new state. One event, one plan, one
// commit, so every finished step's children are decided exactly once. One pass in topological
// order settles a parent before its children, so a cascade (a skip, a step that finishes as it
// starts) reaches the end of the graph in the same plan. Pure.
import { isFinishedStepState, type WorkflowRunState } from '@orbit/protocol/states';
import type { SkipReason, WorkflowStepError } from '@orbit/protocol/workflow-views';
import { decideChild, finalRunState, startTaskStep, taskStepProgress, type NewStepTask, type StepTaskView, type StepView } from './decide.js';
import type { StepGraph } from './graph.js';

export interface RunView {
  state: WorkflowRunState;
  input: unknown;
  concurrency_key?: string;
  steps: Readonly<Record<string, StepView>>;
  /** Signals sent and not consumed yet, by name. */
  kept: Readonly<Record<string, unknown>>;
}

/** `started`: the step starts in this transaction, so its signal timeout counts from it. */
export type StepChange =
  | { key: string; state: 'SKIPPED'; skipped_because: SkipReason }
  | { key: string; state: 'READY'; cause: 'paused' | 'quota' }
  | { key: string; state: 'ACTIVE'; started: true; tasks: NewStepTask[] }
  | { key: string; state: 'ACTIVE' | 'IN_REVIEW'; started: false }
  | { key: string; state: 'WAITING_SIGNAL'; started: true; signal: string; timeout_seconds: number }
  | { key: string; state: 'SUCCEEDED'; started: boolean; output: unknown; consumed_signal?: string }
  | { key: string; state: 'FAILED'; started: boolean; error: WorkflowStepError }
  | { key: string; state: 'CANCELLED' };

export interface Plan {
  changes: StepChange[];
  /** Tasks to cancel in this transaction, as a task's :cancel would: a failed step's WAITING
   * tasks; on a run cancel its WAITING and LEASED ones. */
  cancel: { key: string; indexes: number[] }[];
  run: WorkflowRunState;
  /** A signal kept for a step not reached yet. */
  keep?: { name: string; payload: unknown };
  tasksCreated: number;
}

export function viewOf(c: StepChange): StepView {
  const v: StepView = { state: c.state };
  if (c.state === 'SKIPPED') v.skipped_because = c.skipped_because;
  if (c.state === 'SUCCEEDED') v.output = c.output;
  if (c.state === 'FAILED') v.error = c.error;
  return v;
}

export const isFinal = (s: WorkflowRunState) => s === 'SUCCEEDED' || s === 'FAILED' || s === 'CANCELLED';

class Planner {
  readonly steps: Record<string, StepView>;
  readonly kept: Record<string, unknown>;
  readonly plan: Plan;

  /** `room`: the unfinished-task quota's room; a step whose tasks do not fit becomes READY (quota).
   * Unlimited by default: the applier tries the quota with the whole plan and, if refused, plans
   * again with room 0. */
  constructor(
    readonly g: StepGraph,
    readonly run: RunView,
    private room = Number.POSITIVE_INFINITY,
  ) {
    this.steps = { ...run.steps };
    this.kept = { ...run.kept };
    this.plan = { changes: [], cancel: [], run: run.state, tasksCreated: 0 };
  }

  change(c: StepChange): void {
    this.plan.changes.push(c);
    this.steps[c.key] = viewOf(c);
  }

  /** Starts step `i`, whose parents are finished and whose rule holds, or leaves it READY. */
  start(i: number): void {
    const step = this.g.steps[i]!;
    if (this.plan.run === 'PAUSED') {
      if (this.steps[step.key]!.state !== 'READY') this.change({ key: step.key, state: 'READY', cause: 'paused' });
      return;
    }
    if (step.signal) {
      const name = step.signal.name;
      if (Object.prototype.hasOwnProperty.call(this.kept, name)) {
        const output = this.kept[name];
        delete this.kept[name];
        this.change({ key: step.key, state: 'SUCCEEDED', started: true, output, consumed_signal: name });
      } else {
        this.change({ key: step.key, state: 'WAITING_SIGNAL', started: true, signal: name, timeout_seconds: step.signal.timeout_seconds });
      }
      return;
    }
    const parents = this.g.parents[i]!.map((p) => ({ key: this.g.steps[p]!.key, view: this.steps[this.g.steps[p]!.key]! }));
    const s = startTaskStep(step, this.run, parents);
    if (s.kind === 'succeeded') this.change({ key: step.key, state: 'SUCCEEDED', started: true, output: s.output });
    else if (s.kind === 'failed') this.change({ key: step.key, state: 'FAILED', started: true, error: s.error });
    else if (s.tasks.length > this.room) {
      if (this.steps[step.key]!.state !== 'READY') this.change({ key: step.key, state: 'READY', cause: 'quota' });
    } else {
      this.room -= s.tasks.length;
      this.plan.tasksCreated += s.tasks.length;
      this.change({ key: step.key, state: 'ACTIVE', started: true, tasks: s.tasks });
    }
  }

  /** `startReady` (a resume, the sweeper) also starts READY steps whose tasks fit. */
  settle(startReady: boolean): Plan {
    if (!isFinal(this.plan.run)) {
      for (const i of this.g.order) {
        const step = this.g.steps[i]!;
        const view = this.steps[step.key]!;
        if (view.state === 'READY') {
          if (startReady) this.start(i);
          continue;
        }
        if (view.state !== 'PENDING') continue;
        const parents = this.g.parents[i]!.map((p) => this.steps[this.g.steps[p]!.key]!);
        const d = decideChild(step.run_if, parents);
        if (d.kind === 'skip') this.change({ key: step.key, state: 'SKIPPED', skipped_because: d.because });
        else if (d.kind === 'start') this.start(i);
      }
      const final = finalRunState(this.g.steps.map((s) => this.steps[s.key]!));
      if (final) this.plan.run = final;
    }
    return this.plan;
  }
}

/** Every step PENDING; the roots' tasks must fit the quota, else 429 and nothing is created. */
export function initialRunView(g: StepGraph, input: unknown, concurrencyKey?: string): RunView {
  const steps: Record<string, StepView> = {};
  for (const s of g.steps) steps[s.key] = { state: 'PENDING' };
  const run: RunView = { state: 'RUNNING', input, steps, kept: {} };
  if (concurrencyKey !== undefined) run.concurrency_key = concurrencyKey;
  return run;
}

export function planStart(g: StepGraph, run: RunView, taskRoom?: number): Plan {
  return new Planner(g, run, taskRoom).settle(false);
}

/**
 * Tasks of some steps changed state in this transaction: `updates` gives all of each such step's
 * tasks as they are now. On a final run nothing starts, and a task back in WAITING (a retry, an
 * expired lease) is cancelled so that it does not run again for a run that is over.
 */
export function planTasksChanged(g: StepGraph, run: RunView, updates: readonly { key: string; tasks: readonly StepTaskView[] }[], taskRoom?: number): Plan {
  const p = new Planner(g, run, taskRoom);
  if (isFinal(run.state)) {
    for (const u of updates) {
      const indexes = u.tasks.filter((t) => t.state === 'WAITING').map((t) => t.index);
      if (indexes.length > 0) p.plan.cancel.push({ key: u.key, indexes });
    }
    return p.plan;
  }
  for (const u of updates) {
    const step = g.steps[g.index.get(u.key)!]!;
    const before = p.steps[u.key]!.state;
    if (before !== 'ACTIVE' && before !== 'IN_REVIEW') continue;
    const prog = taskStepProgress(step.for_each !== undefined, u.tasks);
    if (prog.cancel.length > 0) p.plan.cancel.push({ key: u.key, indexes: prog.cancel });
    if (prog.state === 'SUCCEEDED') p.change({ key: u.key, state: 'SUCCEEDED', started: false, output: prog.output });
    else if (prog.state === 'FAILED') p.change({ key: u.key, state: 'FAILED', started: false, error: prog.error });
    else if (prog.state !== before) p.change({ key: u.key, state: prog.state, started: false });
  }
  return p.settle(false);
}

export function signalStepOf(g: StepGraph, name: string): string | undefined {
  return g.steps.find((s) => s.signal?.name === name)?.key;
}

export type SignalOutcome = 'consumed' | 'kept' | 'late';

/**
 * A signal not sent before (the caller's unique row decides that). Its waiting step succeeds with
 * the payload, also while paused; a step not reached yet finds it kept. `late`: the step already
 * finished, nothing would ever consume it, so the caller refuses it rather than keep it.
 */
export function planSignal(g: StepGraph, run: RunView, name: string, payload: unknown, taskRoom?: number): { outcome: SignalOutcome; plan: Plan } {
  const p = new Planner(g, run, taskRoom);
  const key = signalStepOf(g, name);
  if (key === undefined) throw new Error(`planSignal: no step waits for ${name}`);
  const state = p.steps[key]!.state;
  if (state === 'WAITING_SIGNAL') {
    p.change({ key, state: 'SUCCEEDED', started: false, output: payload, consumed_signal: name });
    return { outcome: 'consumed', plan: p.settle(false) };
  }
  if (state === 'PENDING' || state === 'READY') {
    p.plan.keep = { name, payload };
    return { outcome: 'kept', plan: p.plan };
  }
  return { outcome: 'late', plan: p.plan };
}

/** The timeout counts from the step's start, also while paused. */
export function planSignalTimeout(g: StepGraph, run: RunView, key: string, taskRoom?: number): Plan {
  const p = new Planner(g, run, taskRoom);
  if (isFinal(run.state) || p.steps[key]!.state !== 'WAITING_SIGNAL') return p.plan;
  const step = g.steps[g.index.get(key)!]!;
  const error = { code: 'SIGNAL_TIMEOUT', message: `signal ${step.signal!.name} not received within ${step.signal!.timeout_seconds} s` };
  p.change({ key, state: 'FAILED', started: false, error });
  return p.settle(false);
}

/** No new step tasks; created tasks go on; READY steps wait for resume. */
export function planPause(g: StepGraph, run: RunView): Plan {
  const p = new Planner(g, run);
  if (run.state !== 'RUNNING') return p.plan;
  p.plan.run = 'PAUSED';
  for (const s of g.steps) if (p.steps[s.key]!.state === 'READY') p.change({ key: s.key, state: 'READY', cause: 'paused' });
  return p.plan;
}

/** READY steps start in this transaction; those whose tasks do not fit stay READY. */
export function planResume(g: StepGraph, run: RunView, taskRoom?: number): Plan {
  const p = new Planner(g, run, taskRoom);
  if (run.state !== 'PAUSED') return p.plan;
  p.plan.run = 'RUNNING';
  return p.settle(true);
}

export function planStartReady(g: StepGraph, run: RunView, taskRoom?: number): Plan {
  const p = new Planner(g, run, taskRoom);
  if (run.state !== 'RUNNING') return p.plan;
  return p.settle(true);
}

/** WAITING and LEASED tasks are cancelled; RUNNING ones finish and are recorded, nothing after. */
export function planCancel(g: StepGraph, run: RunView, tasks: readonly { key: string; tasks: readonly StepTaskView[] }[]): Plan {
  const p = new Planner(g, run);
  if (isFinal(run.state)) return p.plan;
  p.plan.run = 'CANCELLED';
  for (const s of g.steps) {
    if (isFinishedStepState(p.steps[s.key]!.state)) continue;
    p.change({ key: s.key, state: 'CANCELLED' });
  }
  for (const t of tasks) {
    const indexes = t.tasks.filter((x) => x.state === 'WAITING' || x.state === 'LEASED').map((x) => x.index);
    if (indexes.length > 0) p.plan.cancel.push({ key: t.key, indexes });
  }
  return p.plan;
}
