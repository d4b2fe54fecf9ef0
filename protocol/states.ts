// The states of tasks, attempts, deliveries, workflow runs and steps as the database stores them
// (the ENUM columns of migrations/000001_initial_schema.sql and 000006_workflows.sql) and the API
// shows them (docs/guarantees.md, docs/workflows.md). One list each, with its string-literal union: row types,
// views and comparisons use the union, so a misspelt state is a compile error rather than a
// condition that is never true. Pure constants (no imports): the console bundles this file too.

export const TASK_STATES = ['WAITING', 'LEASED', 'RUNNING', 'NEEDS_REVIEW', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'DEADLINE_EXCEEDED'] as const;
export type TaskState = (typeof TASK_STATES)[number];

/** A task not yet finished: it holds a slot of its application's unfinished-task quota and keeps
 * its queue from being retired (NEEDS_REVIEW waits for a person, not a worker). */
export const UNFINISHED_TASK_STATES = ['WAITING', 'LEASED', 'RUNNING', 'NEEDS_REVIEW'] as const satisfies readonly TaskState[];
export type UnfinishedTaskState = (typeof UNFINISHED_TASK_STATES)[number];
/** A finished task: its result is frozen and a result event was appended. */
export type TerminalTaskState = Exclude<TaskState, UnfinishedTaskState>;

export const ATTEMPT_STATES = ['LEASED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'RETRY', 'UNKNOWN', 'EXPIRED', 'CANCELLED'] as const;
export type AttemptState = (typeof ATTEMPT_STATES)[number];

/** An attempt that holds its lease (and its permits): the only states a worker can act on. */
export const LIVE_ATTEMPT_STATES = ['LEASED', 'RUNNING'] as const satisfies readonly AttemptState[];
export type LiveAttemptState = (typeof LIVE_ATTEMPT_STATES)[number];

/** Result-stream deliveries. A LEASED delivery past its lease reads as EXPIRED. */
export const DELIVERY_STATES = ['PENDING', 'LEASED', 'EXPIRED', 'ACKED'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** Workflow runs (docs/workflows.md). SUCCEEDED, FAILED and CANCELLED are final: every command but a
 * read is then 409 STATE_CONFLICT. */
export const WORKFLOW_RUN_STATES = ['RUNNING', 'PAUSED', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type WorkflowRunState = (typeof WORKFLOW_RUN_STATES)[number];
/** An unfinished run pins its version's queues (no retirement) and its workflow (no retirement). */
export const UNFINISHED_RUN_STATES = ['RUNNING', 'PAUSED'] as const satisfies readonly WorkflowRunState[];
export type FinalRunState = Exclude<WorkflowRunState, (typeof UNFINISHED_RUN_STATES)[number]>;

/** Steps of a run: PENDING (a parent is unfinished), READY (may start; the run is paused or the
 * quota is full), ACTIVE (its tasks exist, one is unfinished), WAITING_SIGNAL, IN_REVIEW (one of its
 * tasks is NEEDS_REVIEW), and the four finished states. */
export const WORKFLOW_STEP_STATES = ['PENDING', 'READY', 'ACTIVE', 'WAITING_SIGNAL', 'IN_REVIEW', 'SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'] as const;
export type WorkflowStepState = (typeof WORKFLOW_STEP_STATES)[number];
/** A finished step: its children may be decided, and it never changes again. */
export const FINISHED_STEP_STATES = ['SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'] as const satisfies readonly WorkflowStepState[];
export type FinishedStepState = (typeof FINISHED_STEP_STATES)[number];

export function isTaskState(s: string): s is TaskState {
  return (TASK_STATES as readonly string[]).includes(s);
}

export function isDeliveryState(s: string): s is DeliveryState {
  return (DELIVERY_STATES as readonly string[]).includes(s);
}

export function isWorkflowRunState(s: string): s is WorkflowRunState {
  return (WORKFLOW_RUN_STATES as readonly string[]).includes(s);
}

export function isFinishedStepState(s: string): s is FinishedStepState {
  return (FINISHED_STEP_STATES as readonly string[]).includes(s);
}

export function isLiveAttemptState(s: string): s is LiveAttemptState {
  return (LIVE_ATTEMPT_STATES as readonly string[]).includes(s);
}
