// The one table of stable error codes, shared by the HTTP facade, the gateway and the SDK.
// `code` is the contract; messages are for humans. Documented in docs/errors.md.

export const ERROR_CODES = {
  INVALID_ARGUMENT: { http: 400, close: null, retryable: false, doc: 'malformed JSON, schema violation, unknown field, bad header' },
  PROTOCOL_ERROR: { http: 400, close: 1002, retryable: false, doc: 'worker protocol violation (bad frame, unknown type or field, hello not first)' },
  UNAUTHENTICATED: { http: 401, close: 1008, retryable: false, doc: 'no or bad credential' },
  PERMISSION_DENIED: { http: 403, close: 1008, retryable: false, doc: 'missing scope or queue authorization' },
  NOT_FOUND: { http: 404, close: null, retryable: false, doc: "absent or outside the credential's namespace/ownership" },
  METHOD_NOT_ALLOWED: { http: 405, close: null, retryable: false, doc: 'the path exists but not with this method; the Allow header lists the methods' },
  IDEMPOTENCY_CONFLICT: { http: 409, close: null, retryable: false, doc: 'Idempotency-Key reused with different content or target' },
  STATE_CONFLICT: {
    http: 409,
    close: 4409,
    retryable: false,
    doc: 'revision mismatch, wrong state for the command, frozen property changed, superseded session',
  },
  RESOURCE_BUSY: { http: 409, close: null, retryable: false, doc: 'retirement refused; the message names the blocking dependency' },
  RESOURCE_RETIRED: { http: 409, close: 1008, retryable: false, doc: 'new work aimed at a retired resource' },
  LEASE_LOST: { http: 409, close: null, retryable: false, doc: 'the attempt was cancelled, expired or belongs to another worker' },
  EVENT_HISTORY_EXPIRED: { http: 410, close: null, retryable: false, doc: 'unverifiable gap in the result stream' },
  REQUEST_TIMEOUT: { http: 408, close: null, retryable: true, doc: 'request headers or body not received in time (slow sender); the connection is closed' },
  PAYLOAD_TOO_LARGE: { http: 413, close: 1009, retryable: false, doc: 'body, payload or frame over the limit' },
  QUOTA_EXCEEDED: { http: 429, close: null, retryable: true, doc: 'application or namespace quota reached' },
  INTERNAL: { http: 500, close: 1011, retryable: false, doc: 'bug; logged with the request id; no partial effect' },
  UNAVAILABLE: { http: 503, close: 1001, retryable: true, doc: 'database unreachable or busy, or shutting down; safe to retry with the same key' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * Codes of a workflow step's `error` (docs/workflows.md) that the server writes itself. They describe
 * why a step FAILED and are never an HTTP status or a close code, so they are not ERROR_CODES (an
 * OrbitError cannot carry them and no endpoint answers with them). A step that failed because one
 * of its tasks failed carries that task's error instead (the worker's code, CANCELLED,
 * DEADLINE_EXCEEDED, LEASE_EXPIRED, RESOLVED). Documented in docs/errors.md, second table.
 */
export const STEP_ERROR_CODES = {
  FOR_EACH_INVALID: { doc: "the for_each parent's output is not a JSON array of 0-1000 elements" },
  SIGNAL_TIMEOUT: { doc: "the signal did not arrive within the step's timeout_seconds" },
  PAYLOAD_TOO_LARGE: { doc: "a step task's payload (input, params, parents' outputs, item) serializes over 256 KiB" },
} as const;

export type StepErrorCode = keyof typeof STEP_ERROR_CODES;

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

/** An error with a documented code. Thrown anywhere in the server; turned into an envelope or an
 * `error` frame at the edge. */
export class OrbitError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;
  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'OrbitError';
    this.code = code;
    this.details = details;
  }
  get httpStatus(): number {
    return ERROR_CODES[this.code].http;
  }
  toBody(): ErrorBody {
    return this.details ? { code: this.code, message: this.message, details: this.details } : { code: this.code, message: this.message };
  }
}

export function isErrorCode(s: unknown): s is ErrorCode {
  return typeof s === 'string' && Object.prototype.hasOwnProperty.call(ERROR_CODES, s);
}
