// The task lifecycle: every way a live attempt ends and a task without one ends or reopens, as two
// tables, and one function per table applying a batch of them in the caller's transaction (which
// holds the rows' locks, attempt then task). Results, the sweeper, cancels, :resolve, reconnect
// releases and workflow cancels all end here; the effects go to the transaction's ledger (ledger.ts).
import type { ResultFrame } from '@orbit/protocol/frames';
import type { Tx } from '../db/pool.js';
import { dbNow } from '../db/time.js';
import { closeAttempts, updateEndedTasks, type ClosedAttempt, type EndedTask } from '../db/attempt-batches.js';
import type { WaitingRow } from '../db/waiting-tasks.js';
import type { TaskFields } from '../db/tasks.js';
import type { AttemptFields } from '../db/attempts.js';
import type { QueueConfig } from '../db/queue-config.js';
import { OUTCOME_EVENT, type PermitLedger } from './ledger.js';

type EndState = 'SUCCEEDED' | 'FAILED' | 'CANCELLED' | 'DEADLINE_EXCEEDED' | 'NEEDS_REVIEW' | 'WAITING';

interface Fate {
  /** The attempt's final state (a live attempt's table only). */
  attempt?: 'SUCCEEDED' | 'FAILED' | 'RETRY' | 'UNKNOWN' | 'EXPIRED' | 'CANCELLED';
  task: EndState;
  /** The task's result outcome and its result event; null: no result (back to WAITING). */
  outcome: 'succeeded' | 'failed' | 'unknown' | 'cancelled' | 'deadline_exceeded' | null;
  /** The error recorded when the event carries none. */
  error?: { code: string; message: string };
}

/** A live (LEASED or RUNNING) attempt ends. */
export const ATTEMPT_ENDS = {
  succeeded: { attempt: 'SUCCEEDED', task: 'SUCCEEDED', outcome: 'succeeded' },
  failed: { attempt: 'FAILED', task: 'FAILED', outcome: 'failed' },
  unknown: { attempt: 'UNKNOWN', task: 'NEEDS_REVIEW', outcome: 'unknown' },
  /** FAILED instead when no attempt or no time before the deadline is left (decideOutcome). */
  retry: { attempt: 'RETRY', task: 'WAITING', outcome: null },
  /** The gateway or an operator. A never-started attempt consumes no attempt: its task waits again. */
  'expire-leased': { attempt: 'EXPIRED', task: 'WAITING', outcome: null, error: { code: 'LEASE_EXPIRED', message: 'lease ran out before start' } },
  'release-unlisted': {
    attempt: 'EXPIRED',
    task: 'WAITING',
    outcome: null,
    error: { code: 'LEASE_EXPIRED', message: 'released unstarted: not resumed at reconnect, or never delivered' },
  },
  'expire-running': {
    attempt: 'UNKNOWN',
    task: 'NEEDS_REVIEW',
    outcome: 'unknown',
    error: { code: 'LEASE_EXPIRED', message: 'lease ran out while running; effect unknown' },
  },
  deadline: {
    attempt: 'CANCELLED',
    task: 'DEADLINE_EXCEEDED',
    outcome: 'deadline_exceeded',
    error: { code: 'DEADLINE_EXCEEDED', message: 'task deadline passed before start' },
  },
  cancel: { attempt: 'CANCELLED', task: 'CANCELLED', outcome: 'cancelled', error: { code: 'CANCELLED', message: 'cancelled' } },
} as const satisfies Record<string, Fate>;

/** A task without a live attempt ends or reopens (from WAITING or NEEDS_REVIEW). */
export const TASK_ENDS = {
  cancel: { task: 'CANCELLED', outcome: 'cancelled', error: { code: 'CANCELLED', message: 'cancelled' } },
  deadline: { task: 'DEADLINE_EXCEEDED', outcome: 'deadline_exceeded', error: { code: 'DEADLINE_EXCEEDED', message: 'task deadline passed while waiting' } },
  'resolve-succeeded': { task: 'SUCCEEDED', outcome: 'succeeded' },
  'resolve-failed': { task: 'FAILED', outcome: 'failed', error: { code: 'RESOLVED', message: 'resolved as failed' } },
  /** Back to WAITING, due now, its result cleared; a new attempt gets a new lease and token. */
  'resolve-retry': { task: 'WAITING', outcome: null },
} as const satisfies Record<string, Fate>;

/** A live attempt as its ending needs it (locked). */
export type LiveAttempt = Pick<AttemptFields, 'id' | 'task_id' | 'namespace_id' | 'application_id' | 'queue_id' | 'concurrency_key' | 'state'>;

/** A task as its ending needs it (locked). */
// prettier-ignore
export type EndingTask = Pick<TaskFields, 'id' | 'namespace_id' | 'application_id' | 'queue_id' | 'concurrency_key' | 'state' | 'attempts_made'
  | 'current_attempt_id' | 'not_before' | 'workflow_run_id' | 'workflow_step'>;

export interface AttemptEnding {
  a: LiveAttempt;
  t: EndingTask;
  end: keyof typeof ATTEMPT_ENDS;
  /** A revocation's message, in place of the table's. */
  reason?: string;
  /** Present when a worker's result ends the attempt; absent for a revocation. */
  result?: ResultEnding;
}

export type TaskEnding = { t: EndingTask & WaitingRow; end: keyof typeof TASK_ENDS; reason?: string };

export interface ResultEnding {
  /** decideOutcome's: a retry's task FAILED instead of WAITING when nothing is left. */
  taskState: EndState;
  taskOutcome: Fate['outcome'];
  attemptsMade: number;
  /** A retry's not_before. */
  notBefore: string | null;
  /** The output as JSON text, and its value for the result event. */
  output: string | null;
  outputValue: unknown;
  error: { code: string; message: string } | null;
  /** The frame's fingerprint and frozen reply: a repeated frame is answered from them. */
  fingerprint: string;
  reply: string;
}

/** Ends live attempts: each closed, its permits and key released, its task moved as the table says.
 * `now`: the database clock (read when absent). */
export async function endAttempts(c: Tx, ledger: PermitLedger, items: AttemptEnding[], now?: string): Promise<void> {
  if (items.length === 0) return;
  const at = now ?? (await dbNow(c));
  const closed: ClosedAttempt[] = [];
  const tasks: EndedTask[] = [];
  for (const x of items) {
    const fate: Fate = ATTEMPT_ENDS[x.end];
    const r = x.result;
    const error = r ? r.error : fate.error ? { code: fate.error.code, message: x.reason ?? fate.error.message } : null;
    closed.push({
      id: x.a.id,
      state: fate.attempt!,
      outcome: r ? x.end : fate.attempt === 'UNKNOWN' ? 'unknown' : null,
      output: r?.output ?? null,
      errorCode: error?.code ?? null,
      errorMessage: error?.message ?? null,
      fingerprint: r?.fingerprint ?? null,
      reply: r?.reply ?? null,
      started: r !== undefined,
    });
    ledger.releaseAttempt(x.a);
    // A revoked never-started attempt that is no longer its task's current one leaves the task alone.
    if (fate.task === 'WAITING' && !r && x.t.current_attempt_id !== x.a.id) continue;
    const state = r?.taskState ?? fate.task;
    tasks.push(
      moveTask(ledger, x.t, state, r ? r.taskOutcome : fate.outcome, {
        attemptsMade: r?.attemptsMade ?? x.t.attempts_made,
        notBefore: state === 'WAITING' ? (r ? r.notBefore : x.t.not_before) : null,
        output: x.end === 'succeeded' ? (r?.output ?? null) : null,
        outputValue: r?.outputValue,
        error,
      }),
    );
  }
  await closeAttempts(c, closed, at);
  await updateEndedTasks(c, tasks, at);
}

/** Ends or reopens tasks without a live attempt (WAITING or NEEDS_REVIEW, locked). */
export async function endTasks(c: Tx, ledger: PermitLedger, items: TaskEnding[], now?: string): Promise<void> {
  if (items.length === 0) return;
  const at = now ?? (await dbNow(c));
  const tasks = items.map(({ t, end, reason }) => {
    const fate: Fate = TASK_ENDS[end];
    const error = fate.error ? { code: fate.error.code, message: reason ?? fate.error.message } : null;
    // A WAITING task leaves its waiting row (under its key row's lock, at the flush).
    if (t.state === 'WAITING') ledger.leaveWaiting(t);
    return moveTask(ledger, t, fate.task, fate.outcome, { attemptsMade: t.attempts_made, notBefore: null, output: null, error });
  });
  await updateEndedTasks(c, tasks, at);
}

/** The ledger effects of task `t` moving to `state`, and its row's new values. */
function moveTask(
  ledger: PermitLedger,
  t: EndingTask,
  state: EndState,
  outcome: Fate['outcome'],
  v: { attemptsMade: number; notBefore: string | null; output: string | null; outputValue?: unknown; error: { code: string; message: string } | null },
): EndedTask {
  ledger.taskChanged(t);
  if (state === 'WAITING') {
    ledger.enterWaiting({ id: t.id, namespace_id: t.namespace_id, concurrency_key: t.concurrency_key, not_before: v.notBefore });
    ledger.freedQueues.add(t.queue_id);
    return { id: t.id, state, attemptsMade: v.attemptsMade, notBefore: v.notBefore, result: null, terminal: false };
  }
  if (state !== 'NEEDS_REVIEW') ledger.taskFinished(t.application_id);
  const result: Record<string, unknown> = { outcome };
  if (v.output !== null) result.output = v.outputValue !== undefined ? v.outputValue : JSON.parse(v.output);
  if (v.error) result.error = v.error;
  ledger.event({ namespaceId: t.namespace_id, type: OUTCOME_EVENT[outcome!]!, taskId: t.id, queueId: t.queue_id, result });
  return {
    id: t.id,
    state,
    attemptsMade: v.attemptsMade,
    notBefore: null,
    result: { outcome: outcome!, output: v.output, errorCode: v.error?.code ?? null, errorMessage: v.error?.message ?? null },
    terminal: state !== 'NEEDS_REVIEW',
  };
}

export interface OutcomeInput {
  outcome: ResultFrame['outcome'];
  retryAfterMs?: number;
  /** The attempt's state before the result (a result for a never-started attempt counts it as started). */
  attemptState: string;
  attemptsMade: number;
  maxAttempts: number;
  /** Database clock and the task's deadline, in epoch ms. */
  nowMs: number;
  deadlineMs: number;
  policy: QueueConfig['retry'] | null;
  /** [0, 1): the jitter draw (Math.random in production; fixed in tests). */
  jitter: number;
}

export interface OutcomeDecision {
  attemptState: 'SUCCEEDED' | 'FAILED' | 'RETRY' | 'UNKNOWN';
  taskState: 'SUCCEEDED' | 'FAILED' | 'WAITING' | 'NEEDS_REVIEW';
  /** The task's result outcome (null when it goes back to WAITING). */
  taskOutcome: 'succeeded' | 'failed' | 'unknown' | null;
  attemptsMade: number;
  /** For WAITING: not_before = now + backoffMs. */
  backoffMs: number;
}

/** The worker's retry_after_ms, else initial × multiplier^(n−1) capped, with jitter so that a burst
 * of failures does not come back in lockstep. */
export function retryBackoffMs(retryAfterMs: number | undefined, q: QueueConfig['retry'], attemptsMade: number, jitter: number): number {
  if (retryAfterMs !== undefined) return retryAfterMs;
  const base = Math.min(q.max, q.initial * Math.pow(q.multiplier, Math.max(0, attemptsMade - 1)));
  return Math.max(0, Math.round(base * (0.8 + jitter * 0.4)));
}

/** What a worker's result does (ATTEMPT_ENDS[outcome]), with a retry's backoff and its fall to
 * FAILED when no attempt or no time before the deadline is left. */
export function decideOutcome(i: OutcomeInput): OutcomeDecision {
  const attemptsMade = i.attemptsMade + (i.attemptState === 'LEASED' ? 1 : 0);
  const fate = ATTEMPT_ENDS[i.outcome];
  if (i.outcome !== 'retry') {
    return { attemptState: fate.attempt, taskState: fate.task as OutcomeDecision['taskState'], taskOutcome: fate.outcome, attemptsMade, backoffMs: 0 };
  }
  if (!i.policy) throw new Error('decideOutcome: a retry needs the queue retry policy');
  const backoffMs = retryBackoffMs(i.retryAfterMs, i.policy, attemptsMade, i.jitter);
  if (attemptsMade >= i.maxAttempts || i.nowMs + backoffMs >= i.deadlineMs) {
    return { attemptState: 'RETRY', taskState: 'FAILED', taskOutcome: 'failed', attemptsMade, backoffMs };
  }
  return { attemptState: 'RETRY', taskState: 'WAITING', taskOutcome: null, attemptsMade, backoffMs };
}
