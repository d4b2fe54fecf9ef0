// The states of tasks, attempts and deliveries as the database stores them (the ENUM columns of
// migrations/000001_initial_schema.sql) and the API shows them (dispatch.md). One list each, with
// its string-literal union: row types, views and comparisons use the union, so a misspelt state
// is a compile error rather than a condition that is never true. Pure constants (no imports):
// the console bundles this file too.

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

export function isTaskState(s: string): s is TaskState {
  return (TASK_STATES as readonly string[]).includes(s);
}

export function isDeliveryState(s: string): s is DeliveryState {
  return (DELIVERY_STATES as readonly string[]).includes(s);
}

export function isLiveAttemptState(s: string): s is LiveAttemptState {
  return (LIVE_ATTEMPT_STATES as readonly string[]).includes(s);
}
