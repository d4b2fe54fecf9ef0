import { type Static, type TSchema } from '@sinclair/typebox';
import { type TypeCheck } from '@sinclair/typebox/compiler';
export declare const SubmitTaskBody: import("@sinclair/typebox").TObject<{
    queue_id: import("@sinclair/typebox").TString;
    handler: import("@sinclair/typebox").TString;
    handler_version: import("@sinclair/typebox").TString;
    payload_version: import("@sinclair/typebox").TString;
    payload: import("@sinclair/typebox").TUnknown;
    business_key: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TString>;
    concurrency_key: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TString>;
    priority: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TInteger>;
    max_attempts: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TInteger>;
    deadline_seconds: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TInteger>;
    not_before: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TString>;
}>;
export type SubmitTaskBody = Static<typeof SubmitTaskBody>;
/** POST /v1/tasks:batch: the envelope. Items are checked one by one (SubmitBatchItem), so that a
 * bad item gets its own 400 in its slot instead of failing the batch. */
export declare const MAX_BATCH_ITEMS = 500;
export declare const SubmitBatchBody: import("@sinclair/typebox").TObject<{
    tasks: import("@sinclair/typebox").TArray<import("@sinclair/typebox").TUnknown>;
}>;
export type SubmitBatchBody = Static<typeof SubmitBatchBody>;
/** One item of POST /v1/tasks:batch: the body of POST /v1/tasks plus its own idempotency_key
 * (same rules as the Idempotency-Key header). */
export declare const SubmitBatchItem: import("@sinclair/typebox").TObject<{
    idempotency_key: import("@sinclair/typebox").TString;
    queue_id: import("@sinclair/typebox").TString;
    handler: import("@sinclair/typebox").TString;
    handler_version: import("@sinclair/typebox").TString;
    payload_version: import("@sinclair/typebox").TString;
    payload: import("@sinclair/typebox").TUnknown;
    business_key: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TString>;
    concurrency_key: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TString>;
    priority: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TInteger>;
    max_attempts: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TInteger>;
    deadline_seconds: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TInteger>;
    not_before: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TString>;
}>;
export type SubmitBatchItem = Static<typeof SubmitBatchItem>;
export declare const RetryPolicy: import("@sinclair/typebox").TObject<{
    max_attempts: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TInteger>;
    initial_backoff_ms: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TInteger>;
    max_backoff_ms: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TInteger>;
    multiplier: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TNumber>;
}>;
export type RetryPolicy = Static<typeof RetryPolicy>;
export declare const CreateQueueBody: import("@sinclair/typebox").TObject<{
    name: import("@sinclair/typebox").TString;
    max_active_attempts: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TInteger>;
    lease_seconds: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TInteger>;
    retry: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TObject<{
        max_attempts: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TInteger>;
        initial_backoff_ms: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TInteger>;
        max_backoff_ms: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TInteger>;
        multiplier: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TNumber>;
    }>>;
}>;
export type CreateQueueBody = Static<typeof CreateQueueBody>;
export declare const RevisionBody: import("@sinclair/typebox").TObject<{
    expected_revision: import("@sinclair/typebox").TString;
}>;
export type RevisionBody = Static<typeof RevisionBody>;
export declare const RetireBody: import("@sinclair/typebox").TObject<{
    expected_revision: import("@sinclair/typebox").TString;
    reason: import("@sinclair/typebox").TString;
}>;
export type RetireBody = Static<typeof RetireBody>;
export declare const CancelTaskBody: import("@sinclair/typebox").TObject<{
    reason: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TString>;
}>;
export type CancelTaskBody = Static<typeof CancelTaskBody>;
export declare const ResolveTaskBody: import("@sinclair/typebox").TObject<{
    resolution: import("@sinclair/typebox").TUnion<[import("@sinclair/typebox").TLiteral<"succeeded">, import("@sinclair/typebox").TLiteral<"failed">, import("@sinclair/typebox").TLiteral<"retry">]>;
    reason: import("@sinclair/typebox").TOptional<import("@sinclair/typebox").TString>;
}>;
export type ResolveTaskBody = Static<typeof ResolveTaskBody>;
export interface CompiledSchema<T extends TSchema> {
    schema: T;
    check: TypeCheck<T>;
}
/** Compiles a schema once per process. */
export declare function compiled<T extends TSchema>(schema: T): TypeCheck<T>;
/** Every schema violation as `{field, message}` (dotted paths), at most `max`, one per field and
 * message (a union member that fails reports once, not once per branch). */
export declare function violations<T extends TSchema>(schema: T, value: unknown, max?: number): {
    field: string;
    message: string;
}[];
/** First schema violation as `{field, message}` (field is a dotted path), or null. */
export declare function firstViolation<T extends TSchema>(schema: T, value: unknown): {
    field: string;
    message: string;
} | null;
export declare const EVENT_TYPES: readonly ["task.succeeded", "task.failed", "task.cancelled", "task.deadline_exceeded", "task.needs_review"];
export declare const CreateSubscriptionBody: import("@sinclair/typebox").TObject<{
    name: import("@sinclair/typebox").TString;
    queue_id: import("@sinclair/typebox").TString;
    event_types: import("@sinclair/typebox").TArray<import("@sinclair/typebox").TUnion<import("@sinclair/typebox").TLiteral<"task.succeeded" | "task.failed" | "task.cancelled" | "task.deadline_exceeded" | "task.needs_review">[]>>;
}>;
export type CreateSubscriptionBody = Static<typeof CreateSubscriptionBody>;
export declare const LeaseDeliveriesBody: import("@sinclair/typebox").TObject<{
    max: import("@sinclair/typebox").TInteger;
    lease_seconds: import("@sinclair/typebox").TInteger;
}>;
export type LeaseDeliveriesBody = Static<typeof LeaseDeliveriesBody>;
export declare const AckDeliveriesBody: import("@sinclair/typebox").TObject<{
    delivery_ids: import("@sinclair/typebox").TArray<import("@sinclair/typebox").TString>;
}>;
export type AckDeliveriesBody = Static<typeof AckDeliveriesBody>;
