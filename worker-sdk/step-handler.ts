// Workflow steps for worker handlers (docs/workflows.md): a step's task carries `workflow` (its run,
// step and for_each index) and a payload of a fixed shape — the run's input, the step's params, the
// output of each succeeded parent, and for a for_each element its item and index. `stepHandler`
// types that payload once, so a handler reads `input`, `params`, `parents` and `item` without
// casting, and refuses a task that is not a workflow step's.
import type { HandlerFn, TaskContext } from './task-context.js';
import { PermanentError } from './errors.js';

/** The payload of a workflow step's task. */
export interface StepPayload<I = unknown, P = unknown, Parents = Record<string, unknown>, Item = unknown> {
  input: I;
  params: P;
  parents: Parents;
  /** A for_each element: the element of the parent's array output. */
  item?: Item;
  /** A for_each element: its position in that array. */
  index?: number;
}

/** What a step handler reads: the payload's parts and the task's place in its run. */
export interface StepArgs<I = unknown, P = unknown, Parents = Record<string, unknown>, Item = unknown> extends StepPayload<I, P, Parents, Item> {
  runId: string;
  step: string;
}

/**
 * A handler for a workflow step's task: `fn(step, e)` gets the payload's `input`, `params`,
 * `parents`, `item` and `index` typed, with `runId` and `step`; its return value is the step task's
 * output (a for_each step's output is the array of its elements' outputs, in element order). A task
 * that is not a workflow step's fails permanently (it was routed to the wrong handler).
 */
export function stepHandler<I = unknown, P = unknown, Parents = Record<string, unknown>, Item = unknown, O = unknown>(
  fn: (step: StepArgs<I, P, Parents, Item>, e: TaskContext<StepPayload<I, P, Parents, Item>>) => O | Promise<O>,
): HandlerFn<StepPayload<I, P, Parents, Item>, O> {
  return (e) => {
    if (!e.workflow) throw new PermanentError(`task ${e.task.id} is not a workflow step's task`);
    const p = e.task.payload;
    const args: StepArgs<I, P, Parents, Item> = { input: p.input, params: p.params, parents: p.parents, runId: e.workflow.runId, step: e.workflow.step };
    if (p.item !== undefined || e.workflow.index !== undefined) {
      args.item = p.item;
      args.index = p.index ?? e.workflow.index;
    }
    return fn(args, e);
  };
}
