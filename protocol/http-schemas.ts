// One TypeBox schema per HTTP request body, compiled once, shared by the facade and the SDK's HTTP
// client. Every object is strict (additionalProperties: false).
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import {
  ACK_IDS_MAX,
  CATCHUP_LIMIT_MAX,
  CRON_MAX,
  DEADLINE_SECONDS_MAX,
  DELIVERY_LEASE_MAX,
  DELIVERY_LEASE_SECONDS_MAX,
  DELIVERY_LEASE_SECONDS_MIN,
  EVERY_SECONDS_MAX,
  MAX_ACTIVE_ATTEMPTS_MAX,
  MAX_ATTEMPTS_MAX,
  MAX_BACKOFF_MS,
  MAX_BATCH_ITEMS,
  PRIORITY_MAX,
  QUEUE_LEASE_SECONDS_MAX,
  QUEUE_LEASE_SECONDS_MIN,
  REASON_MAX,
  RETRY_MULTIPLIER_MAX,
  TIMESTAMP_INPUT_MAX,
  TIMEZONE_MAX,
} from './limits.js';
import { Id, IdempotencyKey, IdField, ResourceName, schemaErrorMessage, TaskCallFields, Text, Uint64 } from './primitives.js';

/** Kept here for existing imports; defined in limits.ts. */
export { MAX_BATCH_ITEMS } from './limits.js';

const Revision = Uint64;
const Reason = Text({ minLength: 1, maxLength: REASON_MAX });
const TimestampInput = Type.String({ minLength: 1, maxLength: TIMESTAMP_INPUT_MAX });

export const SubmitTaskBody = Type.Object(
  {
    queue_id: IdField,
    ...TaskCallFields,
    priority: Type.Optional(Type.Integer({ minimum: 0, maximum: PRIORITY_MAX })),
    max_attempts: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ATTEMPTS_MAX })),
    deadline_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: DEADLINE_SECONDS_MAX })),
    not_before: Type.Optional(TimestampInput),
  },
  { additionalProperties: false },
);
export type SubmitTaskBody = Static<typeof SubmitTaskBody>;

/** POST /v1/tasks:batch: the envelope. Items are checked one by one (SubmitBatchItem), so that a
 * bad item gets its own 400 in its slot instead of failing the batch. */
export const SubmitBatchBody = Type.Object({ tasks: Type.Array(Type.Unknown(), { minItems: 1, maxItems: MAX_BATCH_ITEMS }) }, { additionalProperties: false });
export type SubmitBatchBody = Static<typeof SubmitBatchBody>;

/** One item of POST /v1/tasks:batch: the body of POST /v1/tasks plus its own idempotency_key
 * (same rules as the Idempotency-Key header). */
export const SubmitBatchItem = Type.Object({ ...SubmitTaskBody.properties, idempotency_key: IdempotencyKey }, { additionalProperties: false });
export type SubmitBatchItem = Static<typeof SubmitBatchItem>;

export const RetryPolicy = Type.Object(
  {
    max_attempts: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ATTEMPTS_MAX })),
    initial_backoff_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_BACKOFF_MS })),
    max_backoff_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_BACKOFF_MS })),
    multiplier: Type.Optional(Type.Number({ minimum: 1, maximum: RETRY_MULTIPLIER_MAX })),
  },
  { additionalProperties: false },
);
export type RetryPolicy = Static<typeof RetryPolicy>;

export const CreateQueueBody = Type.Object(
  {
    name: ResourceName,
    max_active_attempts: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ACTIVE_ATTEMPTS_MAX })),
    lease_seconds: Type.Optional(Type.Integer({ minimum: QUEUE_LEASE_SECONDS_MIN, maximum: QUEUE_LEASE_SECONDS_MAX })),
    retry: Type.Optional(RetryPolicy),
  },
  { additionalProperties: false },
);
export type CreateQueueBody = Static<typeof CreateQueueBody>;

export const RevisionBody = Type.Object({ expected_revision: Revision }, { additionalProperties: false });
export type RevisionBody = Static<typeof RevisionBody>;

export const RetireBody = Type.Object({ expected_revision: Revision, reason: Reason }, { additionalProperties: false });
export type RetireBody = Static<typeof RetireBody>;

export const CancelTaskBody = Type.Object({ reason: Type.Optional(Reason) }, { additionalProperties: false });
export type CancelTaskBody = Static<typeof CancelTaskBody>;

export const ResolveTaskBody = Type.Object(
  {
    resolution: Type.Union([Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('retry')]),
    reason: Type.Optional(Reason),
  },
  { additionalProperties: false },
);
export type ResolveTaskBody = Static<typeof ResolveTaskBody>;

export interface CompiledSchema<T extends TSchema> {
  schema: T;
  check: TypeCheck<T>;
}

const cache = new Map<TSchema, TypeCheck<TSchema>>();
/** Compiles a schema once per process. */
export function compiled<T extends TSchema>(schema: T): TypeCheck<T> {
  let c = cache.get(schema);
  if (!c) {
    c = TypeCompiler.Compile(schema);
    cache.set(schema, c);
  }
  return c as TypeCheck<T>;
}

/** Every schema violation as `{field, message}` (dotted paths), at most `max`, one per field and
 * message (a union member that fails reports once, not once per branch). */
export function violations<T extends TSchema>(schema: T, value: unknown, max = 32): { field: string; message: string }[] {
  const check = compiled(schema);
  if (check.Check(value)) return [];
  const out: { field: string; message: string }[] = [];
  const seen = new Set<string>();
  for (const e of check.Errors(value)) {
    const field = e.path.replace(/^\//, '').replace(/\//g, '.');
    if (seen.has(field)) continue; // the first message per field is the most specific
    seen.add(field);
    // A union of literals (an enum) names its values instead of TypeBox's "Expected union value".
    const consts = (e.schema as { anyOf?: { const?: unknown }[] }).anyOf?.map((m) => m.const);
    const message = consts && consts.length > 0 && consts.every((c) => typeof c === 'string') ? `must be one of ${consts.join(', ')}` : schemaErrorMessage(e);
    out.push({ field, message });
    if (out.length >= max) break;
  }
  return out.length > 0 ? out : [{ field: '', message: 'invalid' }];
}

/** First schema violation as `{field, message}` (field is a dotted path), or null. */
export function firstViolation<T extends TSchema>(schema: T, value: unknown): { field: string; message: string } | null {
  const check = compiled(schema);
  if (check.Check(value)) return null;
  const e = check.Errors(value).First();
  if (!e) return { field: '', message: 'invalid' };
  const field = e.path.replace(/^\//, '').replace(/\//g, '.');
  return { field, message: schemaErrorMessage(e) };
}

// ---- result stream: subscriptions and deliveries ----

export const EVENT_TYPES = ['task.succeeded', 'task.failed', 'task.cancelled', 'task.deadline_exceeded', 'task.needs_review'] as const;

export const CreateSubscriptionBody = Type.Object(
  {
    name: ResourceName,
    queue_id: IdField,
    event_types: Type.Array(Type.Union(EVENT_TYPES.map((t) => Type.Literal(t))), { minItems: 1, maxItems: EVENT_TYPES.length, uniqueItems: true }),
  },
  { additionalProperties: false },
);
export type CreateSubscriptionBody = Static<typeof CreateSubscriptionBody>;

export const LeaseDeliveriesBody = Type.Object(
  {
    max: Type.Integer({ minimum: 1, maximum: DELIVERY_LEASE_MAX }),
    lease_seconds: Type.Integer({ minimum: DELIVERY_LEASE_SECONDS_MIN, maximum: DELIVERY_LEASE_SECONDS_MAX }),
  },
  { additionalProperties: false },
);
export type LeaseDeliveriesBody = Static<typeof LeaseDeliveriesBody>;

export const AckDeliveriesBody = Type.Object({ delivery_ids: Type.Array(Id, { minItems: 1, maxItems: ACK_IDS_MAX }) }, { additionalProperties: false });
export type AckDeliveriesBody = Static<typeof AckDeliveriesBody>;

// ---- schedules (docs/schedules.md) ----

/** A version as published: the calendar is checked beyond the schema (exactly one of cron or
 * every_seconds; cron syntax and time zone) by the server, which names the offending field. */
export const ScheduleCalendarInput = Type.Object(
  {
    cron: Type.Optional(Type.String({ minLength: 1, maxLength: CRON_MAX })),
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: TIMEZONE_MAX })),
    every_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: EVERY_SECONDS_MAX })),
  },
  { additionalProperties: false },
);
export type ScheduleCalendarInput = Static<typeof ScheduleCalendarInput>;

/** The task template: POST /v1/tasks without not_before. */
const { not_before: _notBefore, ...templateFields } = SubmitTaskBody.properties;
export const ScheduleTaskInput = Type.Object(templateFields, { additionalProperties: false });
export type ScheduleTaskInput = Static<typeof ScheduleTaskInput>;

export const ScheduleVersionInput = Type.Object(
  {
    calendar: ScheduleCalendarInput,
    task: ScheduleTaskInput,
    overlap: Type.Optional(Type.Union([Type.Literal('allow'), Type.Literal('skip')])),
    catchup: Type.Optional(Type.Union([Type.Literal('none'), Type.Literal('latest'), Type.Literal('all')])),
    catchup_limit: Type.Optional(Type.Integer({ minimum: 1, maximum: CATCHUP_LIMIT_MAX })),
    starts_at: Type.Optional(Type.Union([Type.Null(), TimestampInput])),
    ends_at: Type.Optional(Type.Union([Type.Null(), TimestampInput])),
  },
  { additionalProperties: false },
);
export type ScheduleVersionInput = Static<typeof ScheduleVersionInput>;

export const CreateScheduleBody = Type.Object(
  { name: ResourceName, version: ScheduleVersionInput, paused: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
export type CreateScheduleBody = Static<typeof CreateScheduleBody>;

export const PublishVersionBody = Type.Object({ expected_revision: Revision, version: ScheduleVersionInput }, { additionalProperties: false });
export type PublishVersionBody = Static<typeof PublishVersionBody>;

export const TriggerScheduleBody = Type.Object({ scheduled_for: Type.Optional(TimestampInput) }, { additionalProperties: false });
export type TriggerScheduleBody = Static<typeof TriggerScheduleBody>;
