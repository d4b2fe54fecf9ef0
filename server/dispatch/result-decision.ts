// What a worker's result does to its attempt and task (dispatch.md, "Results"), decided without I/O
// so every branch is unit-testable: the caller reads the locked rows, asks decideOutcome(), then
// writes what it says.
import type { ResultFrame } from '@orbit/protocol/frames';
import type { LiveAttemptState } from '@orbit/protocol/states';

export interface RetryPolicyValues {
  initial: number;
  max: number;
  multiplier: number;
}

export interface OutcomeInput {
  outcome: ResultFrame['outcome'];
  retryAfterMs?: number;
  /** The attempt's state before the result (a result for a never-started attempt counts it as started). */
  attemptState: LiveAttemptState;
  attemptsMade: number;
  maxAttempts: number;
  /** Database clock and the task's deadline, in epoch ms. */
  nowMs: number;
  deadlineMs: number;
  policy: RetryPolicyValues | null;
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

/** Backoff for a retry: the worker's retry_after_ms, else initial × multiplier^(n−1) capped, with
 * ±20 % jitter so that a burst of failures does not come back in lockstep. */
export function retryBackoffMs(retryAfterMs: number | undefined, q: RetryPolicyValues, attemptsMade: number, jitter: number): number {
  if (retryAfterMs !== undefined) return retryAfterMs;
  const base = Math.min(q.max, q.initial * Math.pow(q.multiplier, Math.max(0, attemptsMade - 1)));
  return Math.max(0, Math.round(base * (0.8 + jitter * 0.4)));
}

export function decideOutcome(i: OutcomeInput): OutcomeDecision {
  const attemptsMade = i.attemptsMade + (i.attemptState === 'LEASED' ? 1 : 0);
  switch (i.outcome) {
    case 'succeeded':
      return { attemptState: 'SUCCEEDED', taskState: 'SUCCEEDED', taskOutcome: 'succeeded', attemptsMade, backoffMs: 0 };
    case 'failed':
      return { attemptState: 'FAILED', taskState: 'FAILED', taskOutcome: 'failed', attemptsMade, backoffMs: 0 };
    case 'unknown':
      return { attemptState: 'UNKNOWN', taskState: 'NEEDS_REVIEW', taskOutcome: 'unknown', attemptsMade, backoffMs: 0 };
    case 'retry': {
      if (!i.policy) throw new Error('decideOutcome: a retry needs the queue retry policy');
      const backoffMs = retryBackoffMs(i.retryAfterMs, i.policy, attemptsMade, i.jitter);
      // No attempts left, or the retry would start at or after the deadline: the task fails now.
      if (attemptsMade >= i.maxAttempts || i.nowMs + backoffMs >= i.deadlineMs) {
        return { attemptState: 'RETRY', taskState: 'FAILED', taskOutcome: 'failed', attemptsMade, backoffMs };
      }
      return { attemptState: 'RETRY', taskState: 'WAITING', taskOutcome: null, attemptsMade, backoffMs };
    }
  }
}
