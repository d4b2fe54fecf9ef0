export declare const ERROR_CODES: {
    readonly INVALID_ARGUMENT: {
        readonly http: 400;
        readonly close: null;
        readonly retryable: false;
        readonly doc: "malformed JSON, schema violation, unknown field, bad header";
    };
    readonly PROTOCOL_ERROR: {
        readonly http: 400;
        readonly close: 1002;
        readonly retryable: false;
        readonly doc: "worker protocol violation (bad frame, unknown type or field, hello not first)";
    };
    readonly UNAUTHENTICATED: {
        readonly http: 401;
        readonly close: 1008;
        readonly retryable: false;
        readonly doc: "no or bad credential";
    };
    readonly PERMISSION_DENIED: {
        readonly http: 403;
        readonly close: 1008;
        readonly retryable: false;
        readonly doc: "missing scope or queue authorization";
    };
    readonly NOT_FOUND: {
        readonly http: 404;
        readonly close: null;
        readonly retryable: false;
        readonly doc: "absent or outside the credential's namespace/ownership";
    };
    readonly METHOD_NOT_ALLOWED: {
        readonly http: 405;
        readonly close: null;
        readonly retryable: false;
        readonly doc: "the path exists but not with this method; the Allow header lists the methods";
    };
    readonly IDEMPOTENCY_CONFLICT: {
        readonly http: 409;
        readonly close: null;
        readonly retryable: false;
        readonly doc: "Idempotency-Key reused with different content or target";
    };
    readonly STATE_CONFLICT: {
        readonly http: 409;
        readonly close: 4409;
        readonly retryable: false;
        readonly doc: "revision mismatch, wrong state for the command, frozen property changed, superseded session";
    };
    readonly RESOURCE_BUSY: {
        readonly http: 409;
        readonly close: null;
        readonly retryable: false;
        readonly doc: "retirement refused; the message names the blocking dependency";
    };
    readonly RESOURCE_RETIRED: {
        readonly http: 409;
        readonly close: 1008;
        readonly retryable: false;
        readonly doc: "new work aimed at a retired resource";
    };
    readonly LEASE_LOST: {
        readonly http: 409;
        readonly close: null;
        readonly retryable: false;
        readonly doc: "the attempt was cancelled, expired or belongs to another worker";
    };
    readonly EVENT_HISTORY_EXPIRED: {
        readonly http: 410;
        readonly close: null;
        readonly retryable: false;
        readonly doc: "unverifiable gap in the result stream";
    };
    readonly REQUEST_TIMEOUT: {
        readonly http: 408;
        readonly close: null;
        readonly retryable: true;
        readonly doc: "request headers or body not received in time (slow sender); the connection is closed";
    };
    readonly PAYLOAD_TOO_LARGE: {
        readonly http: 413;
        readonly close: 1009;
        readonly retryable: false;
        readonly doc: "body, payload or frame over the limit";
    };
    readonly QUOTA_EXCEEDED: {
        readonly http: 429;
        readonly close: null;
        readonly retryable: true;
        readonly doc: "application or namespace quota reached";
    };
    readonly INTERNAL: {
        readonly http: 500;
        readonly close: 1011;
        readonly retryable: false;
        readonly doc: "bug; logged with the request id; no partial effect";
    };
    readonly UNAVAILABLE: {
        readonly http: 503;
        readonly close: 1001;
        readonly retryable: true;
        readonly doc: "database unreachable or shutting down; safe to retry with the same key";
    };
};
export type ErrorCode = keyof typeof ERROR_CODES;
export interface ErrorBody {
    code: ErrorCode;
    message: string;
    details?: Record<string, unknown>;
}
/** An error with a documented code. Thrown anywhere in the server; turned into an envelope or an
 * `error` frame at the edge. */
export declare class OrbitError extends Error {
    readonly code: ErrorCode;
    readonly details?: Record<string, unknown>;
    constructor(code: ErrorCode, message: string, details?: Record<string, unknown>);
    get httpStatus(): number;
    toBody(): ErrorBody;
}
export declare function isErrorCode(s: unknown): s is ErrorCode;
