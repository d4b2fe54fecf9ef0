// Error types of the worker SDK. The class a handler throws decides the outcome the worker
// reports (docs/worker-protocol.md, SDK obligations), so "retryable" and "permanent" are types, not
// strings a caller has to remember:
//   RetryableError      → outcome `retry`   (the effect certainly did not happen)
//   UnknownOutcomeError → outcome `unknown` (the effect may have happened; a person reviews it)
//   PermanentError / anything else → outcome `failed`
//
// Every class carries a brand (a registry symbol naming its kind), and `instanceof` checks the
// brand: an error thrown by a handler built against another copy of this package (a library that
// bundles its own @orbit/worker-sdk, a second version in node_modules) is still recognised, so a
// RetryableError from that copy still means `retry`.
import type { ErrorCode } from '@orbit/protocol/errors';
import { ERROR_CODES, isErrorCode } from '@orbit/protocol/errors';
import { ERROR_CODE_MAX } from '@orbit/protocol/limits';

const BRAND = Symbol.for('@orbit/worker-sdk:error-kind');

export type OrbitSdkErrorKind =
  | 'RetryableError'
  | 'UnknownOutcomeError'
  | 'PermanentError'
  | 'ProtocolViolation'
  | 'LeaseLostError'
  | 'GatewayError'
  | 'ConnectionClosedError'
  | 'OrbitApiError'
  | 'StaleTokenError'
  | 'OperationConflictError';

/** Whether `err` is an SDK error (of `kind`, when given) from any copy of the SDK. */
export function isOrbitSdkError(err: unknown, kind?: OrbitSdkErrorKind): boolean {
  if (err === null || typeof err !== 'object') return false;
  const k = (err as { [BRAND]?: unknown })[BRAND];
  return typeof k === 'string' && (kind === undefined || k === kind);
}

/** Marks `cls` with its kind: instances carry the brand, and `x instanceof cls` is true for a
 * branded error of that kind from any SDK copy. A subclass a user defines keeps the ordinary
 * prototype check (so `instanceof MySubclass` stays exact). */
function brand(cls: abstract new (...args: never[]) => Error, kind: OrbitSdkErrorKind): void {
  Object.defineProperty(cls.prototype, BRAND, { value: kind, enumerable: false });
  Object.defineProperty(cls, Symbol.hasInstance, {
    value(this: unknown, v: unknown): boolean {
      if (this === cls) return isOrbitSdkError(v, kind);
      return Function.prototype[Symbol.hasInstance].call(this, v);
    },
  });
}

/** One-line text of any error: its message, else its code, else the first of an AggregateError's
 * errors (a refused connection to a name with two addresses has an empty message). */
export function describeError(err: unknown): string {
  const e = err as { message?: unknown; code?: unknown; errors?: unknown[] } | null;
  let text = typeof e?.message === 'string' && e.message !== '' ? e.message : '';
  if (!text && Array.isArray(e?.errors) && e.errors.length > 0) text = describeError(e.errors[0]);
  if (!text && typeof e?.code === 'string') text = e.code;
  if (!text) text = String(err);
  return text.replace(/\s+/g, ' ').trim();
}

/** Result error codes go on the wire: 1–128 characters (protocol/frames.ts ResultError). */
function cleanCode(code: string | undefined, fallback: string): string {
  if (typeof code !== 'string' || code.length === 0) return fallback;
  return code.length > ERROR_CODE_MAX ? code.slice(0, ERROR_CODE_MAX) : code;
}

/** Thrown by a handler when the effect certainly did not happen and trying again is safe. */
export class RetryableError extends Error {
  readonly retryable = true as const;
  readonly code: string;
  readonly retryAfterMs?: number;
  constructor(message: string, opts: { retryAfterMs?: number; code?: string; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'RetryableError';
    this.code = cleanCode(opts.code, 'RETRYABLE');
    if (opts.retryAfterMs !== undefined) {
      if (!Number.isInteger(opts.retryAfterMs) || opts.retryAfterMs < 0) throw new RangeError('retryAfterMs must be a non-negative integer');
      this.retryAfterMs = opts.retryAfterMs;
    }
  }
}

/** Thrown by a handler when the effect may or may not have happened (e.g. a timeout after the
 * request was sent). The task goes to NEEDS_REVIEW instead of being retried blindly. */
export class UnknownOutcomeError extends Error {
  readonly code: string;
  constructor(message: string, opts: { code?: string; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'UnknownOutcomeError';
    this.code = cleanCode(opts.code, 'UNKNOWN_OUTCOME');
  }
}

/** Thrown by a handler to fail the task permanently with an explicit code. (Any other error also
 * fails the task; this class only makes the intent and the code explicit.) */
export class PermanentError extends Error {
  readonly retryable = false as const;
  readonly code: string;
  constructor(message: string, opts: { code?: string; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'PermanentError';
    this.code = cleanCode(opts.code, 'FAILED');
  }
}

/** The `error` of a worker's `result` event when the worker stopped (a close that timed out with
 * no session open, a fatal error) before the attempt's result could be sent: the lease runs out
 * and, since a handler's result belongs to a started (RUNNING) attempt, the task goes to
 * NEEDS_REVIEW (its effect is unknown), not to another run (the Go SDK's ErrResultNotSent). */
export const RESULT_NOT_SENT = 'RESULT_NOT_SENT' as const;

/** The gateway broke the protocol (bad frame, inconsistent token, …). The SDK closes the
 * connection with 1002 (1003 for binary) and never runs a handler for the offending frame. */
export class ProtocolViolation extends Error {
  readonly code = 'PROTOCOL_ERROR' as const;
  readonly closeCode: number;
  readonly attemptId?: string;
  constructor(message: string, opts: { closeCode?: number; attemptId?: string } = {}) {
    super(message);
    this.name = 'ProtocolViolation';
    this.closeCode = opts.closeCode ?? 1002;
    this.attemptId = opts.attemptId;
  }
}

/** The right to execute an attempt is gone (cancelled, expired, taken over). Used as the
 * AbortSignal reason and as the rejection of `start`/`result` answered with LEASE_LOST. */
export class LeaseLostError extends Error {
  readonly code = 'LEASE_LOST' as const;
  readonly attemptId: string;
  readonly reason: string;
  constructor(attemptId: string, reason: string, message?: string) {
    super(message ?? `lease lost for attempt ${attemptId}: ${reason}`);
    this.name = 'LeaseLostError';
    this.attemptId = attemptId;
    this.reason = reason;
  }
}

/** An `error` frame from the gateway (other than LEASE_LOST, which is a LeaseLostError), or a
 * refused WebSocket handshake (status set, e.g. 401). */
export class GatewayError extends Error {
  readonly code: string;
  readonly fatal: boolean;
  readonly attemptId?: string;
  readonly status?: number;
  constructor(code: string, message: string, opts: { fatal?: boolean; attemptId?: string; status?: number } = {}) {
    super(message);
    this.name = 'GatewayError';
    this.code = code;
    this.fatal = opts.fatal ?? false;
    this.attemptId = opts.attemptId;
    this.status = opts.status;
  }
}

/** The connection closed (or was never open) while a request was waiting for its reply. The
 * request may or may not have reached the gateway: the worker re-sends after reconnecting. */
export class ConnectionClosedError extends Error {
  readonly code = 'CONNECTION_CLOSED' as const;
  /** The WebSocket close code (1006 when the connection dropped or never opened). */
  readonly closeCode: number;
  readonly reason: string;
  constructor(closeCode: number, reason: string) {
    super(`connection closed (${closeCode}${reason ? `: ${reason}` : ''})`);
    this.name = 'ConnectionClosedError';
    this.closeCode = closeCode;
    this.reason = reason;
  }
}

/** An error envelope from the HTTP facade, or a transport failure (status 0). `code` is the
 * contract (protocol/errors.ts); `requestId` is what to quote to operators. */
export class OrbitApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly requestId?: string;
  readonly details?: Record<string, unknown>;
  constructor(code: ErrorCode, message: string, opts: { status: number; requestId?: string; details?: Record<string, unknown>; cause?: unknown }) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'OrbitApiError';
    this.code = code;
    this.status = opts.status;
    this.requestId = opts.requestId;
    this.details = opts.details;
  }
  /** Whether the same request (same Idempotency-Key) may be sent again. */
  get retryable(): boolean {
    return ERROR_CODES[this.code].retryable;
  }
}

export { isErrorCode };

/** Thrown by the fenced resource when a write carries a token lower than the highest token the
 * resource has already seen for that key: a newer permit exists, this writer must stop. */
export class StaleTokenError extends Error {
  readonly code = 'STALE_TOKEN' as const;
  readonly namespace: string;
  readonly key: string;
  readonly token: bigint;
  readonly highestToken: bigint;
  constructor(namespace: string, key: string, token: bigint, highestToken: bigint) {
    super(`stale fencing token ${token} for ${namespace}/${key}: highest seen is ${highestToken}`);
    this.name = 'StaleTokenError';
    this.namespace = namespace;
    this.key = key;
    this.token = token;
    this.highestToken = highestToken;
  }
}

/** The same operation id was already used for a different resource key. */
export class OperationConflictError extends Error {
  readonly code = 'OPERATION_CONFLICT' as const;
  constructor(message: string) {
    super(message);
    this.name = 'OperationConflictError';
  }
}

brand(RetryableError, 'RetryableError');
brand(UnknownOutcomeError, 'UnknownOutcomeError');
brand(PermanentError, 'PermanentError');
brand(ProtocolViolation, 'ProtocolViolation');
brand(LeaseLostError, 'LeaseLostError');
brand(GatewayError, 'GatewayError');
brand(ConnectionClosedError, 'ConnectionClosedError');
brand(OrbitApiError, 'OrbitApiError');
brand(StaleTokenError, 'StaleTokenError');
brand(OperationConflictError, 'OperationConflictError');
