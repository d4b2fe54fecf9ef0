// The workflow decision rules as pure functions over plain values; advance.ts composes them into
// the plan of one event.
import { MAX_FOR_EACH_ELEMENTS, MAX_PAYLOAD_BYTES } from '@orbit/protocol/limits';
import { isFinishedStepState, type TaskState, type WorkflowStepState } from '@orbit/protocol/states';
import type { RunIf } from '@orbit/protocol/workflow-schemas';
import type { SkipReason, WorkflowStep, WorkflowStepError, WorkflowStepTask } from '@orbit/protocol/workflow-views';

export interface StepView {
  state: WorkflowStepState;
  skipped_because?: SkipReason;
  /** SUCCEEDED steps: the output children see in `parents`. */
  output?: unknown;
  error?: WorkflowStepError;
}

/** Index 0 for a step without for_each. */
export interface StepTaskView {
  index: number;
  state: TaskState;
  output?: unknown;
  error?: { code: string; message: string } | null;
}

/** A step skipped because a parent failed counts as failed, so a compensation at the end of a
 * chain runs when any earlier step failed. */
export type ParentOutcome = 'succeeded' | 'failed' | 'skipped';

export function countsAs(s: StepView): ParentOutcome {
  switch (s.state) {
    case 'SUCCEEDED':
      return 'succeeded';
    case 'SKIPPED':
      return s.skipped_because === 'parent_failed' ? 'failed' : 'skipped';
    case 'FAILED':
    case 'CANCELLED':
      return 'failed';
    default:
      throw new Error(`countsAs: step is ${s.state}, not finished`);
  }
}

export type ChildDecision = { kind: 'wait' } | { kind: 'start' } | { kind: 'skip'; because: SkipReason };

/** Decided only once every parent is finished; a root starts. */
export function decideChild(runIf: RunIf | undefined, parents: readonly StepView[]): ChildDecision {
  if (parents.some((p) => !isFinishedStepState(p.state))) return { kind: 'wait' };
  const outcomes = parents.map(countsAs);
  const anyFailed = outcomes.includes('failed');
  switch (runIf ?? 'all_succeeded') {
    case 'all_succeeded':
      if (outcomes.every((o) => o === 'succeeded')) return { kind: 'start' };
      return { kind: 'skip', because: anyFailed ? 'parent_failed' : 'condition' };
    case 'any_failed':
      return anyFailed ? { kind: 'start' } : { kind: 'skip', because: 'condition' };
    case 'always':
      return { kind: 'start' };
  }
}

export type TaskStepProgress =
  | { state: 'ACTIVE' | 'IN_REVIEW'; cancel: number[] }
  | { state: 'SUCCEEDED'; output: unknown; cancel: number[] }
  | { state: 'FAILED'; error: WorkflowStepError; cancel: number[] };

/**
 * `tasks` in index order. `cancel`: WAITING tasks to cancel because one task already failed; they
 * count as CANCELLED. A NEEDS_REVIEW task keeps the step IN_REVIEW, since the run never advances
 * past an unknown effect.
 */
export function taskStepProgress(forEach: boolean, tasks: readonly StepTaskView[]): TaskStepProgress {
  const failed = tasks.some((t) => t.state === 'FAILED' || t.state === 'CANCELLED' || t.state === 'DEADLINE_EXCEEDED');
  const cancel = failed ? tasks.filter((t) => t.state === 'WAITING').map((t) => t.index) : [];
  const states = tasks.map((t) => (cancel.includes(t.index) ? 'CANCELLED' : t.state));
  if (states.includes('NEEDS_REVIEW')) return { state: 'IN_REVIEW', cancel };
  if (states.some((s) => s === 'WAITING' || s === 'LEASED' || s === 'RUNNING')) return { state: 'ACTIVE', cancel };
  if (!failed) {
    const outputs = tasks.map((t) => (t.output === undefined ? null : t.output));
    return { state: 'SUCCEEDED', output: forEach ? outputs : (outputs[0] ?? null), cancel };
  }
  // The cause, not a cascade: a task cancelled because another failed may have a lower index.
  const first = (['FAILED', 'DEADLINE_EXCEEDED', 'CANCELLED'] as const).map((s) => tasks.find((t) => t.state === s)).find((t) => t !== undefined)!;
  const code = first.error?.code ?? first.state;
  const message = first.error?.message ?? `task ended ${first.state}`;
  return { state: 'FAILED', error: { code, message: forEach ? `element ${first.index}: ${message}` : message }, cancel };
}

/** `delay_seconds` becomes not_before on the database clock. */
export interface NewStepTask {
  /** null for a step without for_each (stored as index 0). */
  index: number | null;
  task: Omit<WorkflowStepTask, 'params' | 'use_run_key' | 'concurrency_key'> & { concurrency_key?: string };
  payloadJson: string;
  delay_seconds: number;
}

export type TaskStepStart = { kind: 'tasks'; tasks: NewStepTask[] } | { kind: 'succeeded'; output: unknown[] } | { kind: 'failed'; error: WorkflowStepError };

/** A payload too large fails the step and creates nothing; 0 for_each elements succeed at once. */
export function startTaskStep(
  step: WorkflowStep,
  run: { input: unknown; concurrency_key?: string },
  parents: readonly { key: string; view: StepView }[],
): TaskStepStart {
  const t = step.task!;
  const parentOutputs: Record<string, unknown> = {};
  for (const p of parents) if (p.view.state === 'SUCCEEDED') parentOutputs[p.key] = p.view.output === undefined ? null : p.view.output;
  // The shared part is serialized once, not once per element; same bytes as JSON.stringify.
  const head = `{"input":${JSON.stringify(run.input ?? null)},"params":${JSON.stringify(t.params ?? {})},"parents":${JSON.stringify(parentOutputs)}`;
  const { params: _p, use_run_key, concurrency_key, ...fields } = t;
  const key = use_run_key ? run.concurrency_key : concurrency_key;
  const task = key === undefined ? fields : { ...fields, concurrency_key: key };
  const delay = step.delay_seconds ?? 0;
  let payloads: { index: number | null; payloadJson: string }[] = [{ index: null, payloadJson: head + '}' }];
  if (step.for_each !== undefined) {
    const parent = parents.find((p) => p.key === step.for_each);
    const items = parent?.view.state === 'SUCCEEDED' ? parent.view.output : undefined;
    if (!Array.isArray(items) || items.length > MAX_FOR_EACH_ELEMENTS) {
      const what =
        parent?.view.state !== 'SUCCEEDED' ? `step ${step.for_each} did not succeed` : !Array.isArray(items) ? 'not a JSON array' : `${items.length} elements`;
      return {
        kind: 'failed',
        error: { code: 'FOR_EACH_INVALID', message: `for_each ${step.for_each}: output must be a JSON array of 0-${MAX_FOR_EACH_ELEMENTS} elements (${what})` },
      };
    }
    if (items.length === 0) return { kind: 'succeeded', output: [] };
    payloads = items.map((item: unknown, i) => ({ index: i, payloadJson: `${head},"item":${JSON.stringify(item ?? null)},"index":${i}}` }));
  }
  const large = payloads.find((p) => Buffer.byteLength(p.payloadJson) > MAX_PAYLOAD_BYTES);
  if (large) {
    const element = large.index === null ? '' : `element ${large.index}: `;
    return { kind: 'failed', error: { code: 'PAYLOAD_TOO_LARGE', message: `${element}payload serializes over ${MAX_PAYLOAD_BYTES} bytes` } };
  }
  return { kind: 'tasks', tasks: payloads.map((p) => ({ index: p.index, task, payloadJson: p.payloadJson, delay_seconds: delay })) };
}

/** Skipped steps never fail a run; null while a step is unfinished. */
export function finalRunState(steps: readonly StepView[]): 'SUCCEEDED' | 'FAILED' | null {
  if (steps.some((s) => !isFinishedStepState(s.state))) return null;
  return steps.some((s) => s.state === 'FAILED' || s.state === 'CANCELLED') ? 'FAILED' : 'SUCCEEDED';
}
