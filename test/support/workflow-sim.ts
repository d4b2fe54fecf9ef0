// A simulated world for the workflow decisions (server/workflows/advance.ts): it holds a run's
// tasks, feeds the planner one event at a time as the advancement transactions will (a task's state
// change, a resolve, a signal, a timeout, pause, resume, the sweeper, cancel, a full quota), applies
// each plan exactly as a transaction must (creates the tasks it names, cancels the ones it names),
// and records when each step started and finished. It asserts, after every event, what no plan may
// ever do: create a second task for a (step, index), start a step while the run is paused or final,
// cancel a task that is not cancellable, leave a RUNNING run with nothing that can advance it.
import type { TaskState } from '../../protocol/states.js';
import {
  initialRunView,
  planCancel,
  planPause,
  planResume,
  planSignal,
  planSignalTimeout,
  planStart,
  planStartReady,
  planTasksChanged,
  type Plan,
  type RunView,
  viewOf,
} from '../../server/workflows/advance.js';
import type { StepTaskView, StepView } from '../../server/workflows/decide.js';
import type { StepGraph } from '../../server/workflows/graph.js';

export interface SimTask extends StepTaskView {
  output?: unknown;
}

/** The run as a plan leaves it, as its transaction writes it. */
export function apply(run: RunView, plan: Plan): RunView {
  const steps: Record<string, StepView> = { ...run.steps };
  const kept: Record<string, unknown> = { ...run.kept };
  for (const c of plan.changes) {
    steps[c.key] = viewOf(c);
    if (c.state === 'SUCCEEDED' && c.consumed_signal !== undefined) delete kept[c.consumed_signal];
  }
  if (plan.keep) kept[plan.keep.name] = plan.keep.payload;
  return { ...run, state: plan.run, steps, kept };
}

/** A small deterministic PRNG (mulberry32): the simulation's choices follow from one seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const UNFINISHED: readonly TaskState[] = ['WAITING', 'LEASED', 'RUNNING', 'NEEDS_REVIEW'];

export class WorkflowSim {
  run: RunView;
  readonly tasks = new Map<string, SimTask[]>();
  /** Event ordinal at which each step started / finished. */
  readonly startedAt = new Map<string, number>();
  readonly finishedAt = new Map<string, number>();
  /** Signals sent, by name → payload, with the outcome the planner gave. */
  readonly sent = new Map<string, { payload: unknown; outcome: string }>();
  readonly timedOut = new Set<string>();
  tick = 0;
  cancelledAt: number | null = null;

  constructor(
    readonly g: StepGraph,
    /** Output a succeeding task of `key` reports (for_each sources get arrays, or sometimes not). */
    readonly outputOf: (key: string, index: number) => unknown,
    input: unknown = { n: 1 },
  ) {
    this.run = initialRunView(g, input);
    this.applyPlan(planStart(g, this.run));
  }

  /** Applies a plan as its transaction would, checking what a plan must never do. */
  applyPlan(plan: Plan, resuming = false): void {
    this.tick++;
    for (const c of plan.changes) {
      if ('started' in c && c.started) {
        if (this.startedAt.has(c.key)) throw new Error(`step ${c.key} started twice`);
        if (this.run.state !== 'RUNNING' && !(resuming && this.run.state === 'PAUSED'))
          throw new Error(`step ${c.key} started while the run is ${this.run.state}`);
        this.startedAt.set(c.key, this.tick);
      }
      if (c.state === 'ACTIVE' && c.started) {
        if (this.tasks.has(c.key)) throw new Error(`second set of tasks for step ${c.key}`);
        const seen = new Set<number | null>();
        this.tasks.set(
          c.key,
          c.tasks.map((t, i) => {
            if (seen.has(t.index)) throw new Error(`two tasks for (${c.key}, ${t.index})`);
            seen.add(t.index);
            return { index: t.index ?? i, state: 'WAITING' as TaskState };
          }),
        );
      }
      if (c.state === 'SUCCEEDED' || c.state === 'FAILED' || c.state === 'SKIPPED' || c.state === 'CANCELLED') {
        if (this.finishedAt.has(c.key)) throw new Error(`step ${c.key} finished twice`);
        this.finishedAt.set(c.key, this.tick);
      }
    }
    for (const { key, indexes } of plan.cancel) {
      for (const i of indexes) {
        const t = this.tasks.get(key)!.find((x) => x.index === i)!;
        const cancelling = plan.run === 'CANCELLED' && this.run.state !== 'CANCELLED';
        const allowed = t.state === 'WAITING' || (cancelling && t.state === 'LEASED');
        if (!allowed) throw new Error(`cancel of ${key}[${i}] in ${t.state}`);
        t.state = 'CANCELLED';
        t.error = { code: 'CANCELLED', message: 'cancelled by the workflow' };
      }
    }
    this.run = apply(this.run, plan);
    this.checkNotStuck();
  }

  unfinishedTasks(): { key: string; t: SimTask }[] {
    const out: { key: string; t: SimTask }[] = [];
    for (const [key, ts] of this.tasks) for (const t of ts) if (UNFINISHED.includes(t.state)) out.push({ key, t });
    return out;
  }

  /** Invariant 2 of docs/workflows.md: a RUNNING run has an unfinished task, a WAITING_SIGNAL or
   * IN_REVIEW step, or a READY step. And a step's state agrees with its tasks, and no task waits
   * to run for a failed step or a cancelled run. */
  checkNotStuck(): void {
    for (const [key, ts] of this.tasks) {
      const st = this.run.steps[key]!.state;
      // A failed task cancels its step's WAITING tasks at once; a cancelled run runs nothing again.
      const failed = ts.some((t) => t.state === 'FAILED' || t.state === 'CANCELLED' || t.state === 'DEADLINE_EXCEEDED');
      if ((failed || this.run.state === 'CANCELLED') && ts.some((t) => t.state === 'WAITING'))
        throw new Error(`${key} keeps a WAITING task after a failure or a cancel`);
      if (st === 'ACTIVE' && !ts.some((t) => UNFINISHED.includes(t.state) && t.state !== 'NEEDS_REVIEW')) throw new Error(`${key} ACTIVE without a live task`);
      if (st === 'IN_REVIEW' && !ts.some((t) => t.state === 'NEEDS_REVIEW')) throw new Error(`${key} IN_REVIEW without a task in review`);
    }
    if (this.run.state !== 'RUNNING') return;
    const states = Object.values(this.run.steps).map((s) => s.state);
    const live = this.unfinishedTasks().length > 0 || states.some((s) => s === 'WAITING_SIGNAL' || s === 'IN_REVIEW' || s === 'READY');
    if (!live) throw new Error(`stuck: RUNNING with steps ${JSON.stringify(this.run.steps)}`);
  }

  /** A task of step `key` changes state (a worker's result, an expiry, a deadline, a :cancel or a
   * :resolve); the step's transaction plans with `taskRoom`. */
  setTask(key: string, t: SimTask, state: TaskState, taskRoom?: number): void {
    t.state = state;
    if (state === 'SUCCEEDED') t.output = t.output === undefined ? this.outputOf(key, t.index) : t.output;
    if (state === 'FAILED') t.error = { code: 'WORKER_FAILED', message: `task ${key}[${t.index}] failed` };
    if (state === 'DEADLINE_EXCEEDED') t.error = { code: 'DEADLINE_EXCEEDED', message: 'deadline' };
    if (state === 'CANCELLED') t.error = { code: 'CANCELLED', message: 'cancelled' };
    this.applyPlan(planTasksChanged(this.g, this.run, [{ key, tasks: this.tasks.get(key)! }], taskRoom));
  }

  signal(name: string, payload: unknown): string {
    const r = planSignal(this.g, this.run, name, payload);
    this.sent.set(name, { payload, outcome: r.outcome });
    this.applyPlan(r.plan);
    return r.outcome;
  }

  timeout(key: string): void {
    this.timedOut.add(key);
    this.applyPlan(planSignalTimeout(this.g, this.run, key));
  }

  pause(): void {
    this.applyPlan(planPause(this.g, this.run));
  }

  resume(taskRoom?: number): void {
    this.applyPlan(planResume(this.g, this.run, taskRoom), true);
  }

  sweep(taskRoom?: number): void {
    this.applyPlan(planStartReady(this.g, this.run, taskRoom));
  }

  cancel(): void {
    this.cancelledAt = this.tick + 1;
    this.applyPlan(
      planCancel(
        this.g,
        this.run,
        [...this.tasks].map(([key, tasks]) => ({ key, tasks })),
      ),
    );
  }
}
