// Error types of the worker SDK. The class a handler throws decides the outcome the worker
// reports (worker-protocol.md, SDK obligations), so "retryable" and "permanent" are types, not
// strings a caller has to remember:
//   RetryableError      → outcome `retry`   (the effect certainly did not happen)
//   UnknownOutcomeError → outcome `unknown` (the effect may have happened; a person reviews it)
//   PermanentError / anything else → outcome `failed`
import type { ErrorCode } from '../protocol/errors.js';
import { ERROR_CODES, isErrorCode } from '../protocol/errors.js';

/** Result error codes go on the wire: 1–128 characters (protocol/frames.ts ResultError). */
function cleanCode(code: string | undefined, fallback: string): string {
  if (typeof code !== 'string' || code.length === 0) return fallback;
  return code.length > 128 ? code.slice(0, 128) : code;
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
  readonly code: number;
  readonly reason: string;
  constructor(code: number, reason: string) {
    super(`connection closed (${code}${reason ? `: ${reason}` : ''})`);
    this.name = 'ConnectionClosedError';
    this.code = code;
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
