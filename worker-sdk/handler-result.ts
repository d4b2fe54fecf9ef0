// Turns what a handler did (returned a value, threw) into the `result` frame the worker sends.
// Kept apart from worker.ts so the mapping (docs/worker-protocol.md, SDK obligations) is in one place.
import { ERROR_CODE_MAX, ERROR_MESSAGE_MAX, MAX_BACKOFF_MS, MAX_OUTPUT_BYTES } from '@orbit/protocol/limits';
import type { ResultInput } from './connection.js';
import { GatewayError, RetryableError, UnknownOutcomeError } from './errors.js';
import type { TaskAssignFrame } from '@orbit/protocol/frames';

/** `output` ≤ 256 KiB of JSON (docs/worker-protocol.md `result`; protocol/limits.ts). */
export { MAX_OUTPUT_BYTES };
const MAX_MESSAGE = ERROR_MESSAGE_MAX; // ResultError.message maxLength
const MAX_RETRY_AFTER_MS = MAX_BACKOFF_MS;

/** Makes a string storable text (protocol/primitives.ts `Text`: a lone surrogate becomes U+FFFD,
 * which is what a UTF-8 column would have stored anyway, but the gateway refuses the frame) and
 * cuts it to at most `max` UTF-16 units without splitting a surrogate pair. */
export function clip(text: string, max: number): string {
  const s = text.toWellFormed();
  if (s.length <= max) return s;
  let cut = max;
  const c = s.charCodeAt(cut - 1);
  if (c >= 0xd800 && c <= 0xdbff) cut--;
  return s.slice(0, cut);
}

function messageOf(err: unknown): string {
  if (err instanceof Error) return clip(err.message || err.name, MAX_MESSAGE);
  try {
    return clip(typeof err === 'string' ? err : (JSON.stringify(err) ?? String(err)), MAX_MESSAGE);
  } catch {
    return clip(String(err), MAX_MESSAGE);
  }
}

function codeOf(err: unknown, fallback: string): string {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'string' && c.length > 0 ? clip(c, ERROR_CODE_MAX) : fallback;
}

/** The result for a handler's return value. The output is frozen as parsed JSON so a re-send
 * after a reconnect carries exactly the same content (and is deduplicated by the gateway). */
export function successResult(attemptId: string, value: unknown): ResultInput {
  if (value === undefined) return { attemptId, outcome: 'succeeded' };
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    // The effect happened but the output cannot be reported: fail loudly rather than lose the
    // whole session to a malformed frame.
    return { attemptId, outcome: 'failed', error: { code: 'OUTPUT_NOT_SERIALIZABLE', message: messageOf(err) } };
  }
  if (text === undefined) return { attemptId, outcome: 'succeeded' }; // e.g. a function
  if (Buffer.byteLength(text) > MAX_OUTPUT_BYTES) {
    return {
      attemptId,
      outcome: 'failed',
      error: { code: 'OUTPUT_TOO_LARGE', message: `handler output is ${Buffer.byteLength(text)} bytes of JSON; the limit is ${MAX_OUTPUT_BYTES}` },
    };
  }
  return { attemptId, outcome: 'succeeded', output: JSON.parse(text) };
}

/** The result for a thrown error: RetryableError → retry, UnknownOutcomeError → unknown,
 * anything else → failed (permanent). */
export function errorResult(attemptId: string, err: unknown): ResultInput {
  if (err instanceof RetryableError) {
    // brand check: works across SDK copies (errors.ts)
    const r: ResultInput = { attemptId, outcome: 'retry', error: { code: err.code, message: messageOf(err) } };
    if (err.retryAfterMs !== undefined) r.retryAfterMs = Math.min(err.retryAfterMs, MAX_RETRY_AFTER_MS);
    return r;
  }
  if (err instanceof UnknownOutcomeError) return { attemptId, outcome: 'unknown', error: { code: err.code, message: messageOf(err) } };
  return { attemptId, outcome: 'failed', error: { code: codeOf(err, 'HANDLER_ERROR'), message: messageOf(err) } };
}

/** The result for a task no registered handler runs (the hello's filter should have prevented it):
 * failed without starting. */
export function handlerNotFoundResult(attemptId: string, task: TaskAssignFrame['task']): ResultInput {
  return { attemptId, outcome: 'failed', error: { code: 'HANDLER_NOT_FOUND', message: `no handler for ${task.handler}@${task.handler_version}` } };
}

/** When the SDK itself refused to send a result frame (too big, invalid: thrown before any I/O, so
 * not a GatewayError), the failed result that reports it instead; null for any other error. */
export function locallyRejectedResult(attemptId: string, err: unknown): ResultInput | null {
  const code = (err as { code?: unknown } | null)?.code;
  if ((code !== 'PAYLOAD_TOO_LARGE' && code !== 'INVALID_ARGUMENT') || err instanceof GatewayError) return null;
  return { attemptId, outcome: 'failed', error: { code: 'RESULT_REJECTED', message: clip((err as Error).message, MAX_MESSAGE) } };
}
