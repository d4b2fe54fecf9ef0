// What the OpenAPI document says about each route of the router: summary, the scope it needs,
// its request body schema (the same TypeBox schema the facade validates with), its success status
// and the error codes it can answer. test/api-docs.test.ts checks that every route of the router
// has an entry here and that the scopes are the ones the handlers enforce.
import type { TSchema } from '@sinclair/typebox';
import type { ErrorCode } from '@orbit/protocol/errors';
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, MAX_BATCH_ITEMS } from '@orbit/protocol/limits';
import { DELIVERY_STATES, TASK_STATES } from '@orbit/protocol/states';
import {
  AckDeliveriesBody,
  CancelTaskBody,
  CreateQueueBody,
  CreateSubscriptionBody,
  LeaseDeliveriesBody,
  ResolveTaskBody,
  RetireBody,
  RevisionBody,
  CreateScheduleBody,
  PublishVersionBody,
  SubmitBatchBody,
  TriggerScheduleBody,
  SubmitTaskBody,
} from '@orbit/protocol/http-schemas';

export interface QueryParam {
  name: string;
  description: string;
  enum?: readonly string[];
  integer?: { minimum: number; maximum: number };
}

export interface RouteMeta {
  summary: string;
  /** The scope the credential needs; absent for the unauthenticated health and docs routes. */
  scope?: string;
  /** Other scopes that also grant the route (any one of scope + these suffices). */
  orScopes?: string[];
  body?: TSchema;
  /** Receipt-bearing command: requires Idempotency-Key. */
  idempotent?: boolean;
  query?: QueryParam[];
  status: number;
  /** What `data` holds on success. */
  returns: string;
  /** Route-specific codes; the common ones (auth, 400, 500, 503, …) are added by the generator. */
  errors: ErrorCode[];
}

const limit: QueryParam = { name: 'limit', description: `page size (default ${LIST_LIMIT_DEFAULT})`, integer: { minimum: 1, maximum: LIST_LIMIT_MAX } };
const cursor: QueryParam = { name: 'cursor', description: 'opaque cursor from next_cursor' };

const revisionCmd = (summary: string, scope: string, returns: string): RouteMeta => ({
  summary,
  scope,
  body: RevisionBody,
  idempotent: true,
  status: 200,
  returns,
  errors: ['NOT_FOUND', 'STATE_CONFLICT', 'IDEMPOTENCY_CONFLICT'],
});

export const ROUTE_META: Record<string, RouteMeta> = {
  'GET /healthz': { summary: 'process is up', status: 200, returns: '{status:"ok"}', errors: [] },
  'GET /readyz': { summary: 'database reachable and schema current', status: 200, returns: '{status:"ready",schema_version}', errors: ['UNAVAILABLE'] },
  'GET /metrics': { summary: 'Prometheus text format (not an envelope)', status: 200, returns: 'text/plain metrics', errors: [] },
  'GET /v1/openapi.json': { summary: 'this document', status: 200, returns: 'the OpenAPI 3.1 document (not an envelope)', errors: [] },
  'GET /v1/asyncapi.json': { summary: 'the worker protocol as AsyncAPI 3.0 (not an envelope)', status: 200, returns: 'the AsyncAPI document', errors: [] },
  'POST /v1/tasks': {
    summary: 'submit a task',
    scope: 'tasks:submit',
    body: SubmitTaskBody,
    idempotent: true,
    status: 201,
    returns: '{task, deduplicated} (200 with deduplicated:true on replay)',
    errors: ['NOT_FOUND', 'PERMISSION_DENIED', 'RESOURCE_RETIRED', 'IDEMPOTENCY_CONFLICT', 'PAYLOAD_TOO_LARGE', 'QUOTA_EXCEEDED'],
  },
  'POST /v1/tasks:batch': {
    summary: `submit 1-${MAX_BATCH_ITEMS} tasks, each item its own command with its own idempotency_key (not atomic)`,
    scope: 'tasks:submit',
    body: SubmitBatchBody,
    status: 200,
    returns: '{results: [{status, data: {task, deduplicated}} | {status, error}]} in item order; per-item refusals are slots, not errors',
    errors: ['PAYLOAD_TOO_LARGE'],
  },
  'GET /v1/queues/{id}/stats': {
    summary: 'counts by state, permits in use, oldest waiting, 15 one-minute outcome buckets',
    scope: 'tasks:read',
    orScopes: ['queues:manage'],
    status: 200,
    returns: '{stats}',
    errors: ['NOT_FOUND'],
  },
  'GET /v1/workers': {
    summary: 'connected worker sessions of the namespace on every node',
    scope: 'queues:manage',
    status: 200,
    returns: '{workers}',
    errors: ['NOT_FOUND'],
    query: [{ name: 'queue_id', description: 'only sessions consuming this queue' }],
  },
  'GET /v1/tasks': {
    summary: 'list tasks, newest first',
    scope: 'tasks:read',
    status: 200,
    returns: '{tasks, next_cursor}',
    errors: ['NOT_FOUND'],
    query: [
      { name: 'queue_id', description: 'a queue id (not a name)' },
      { name: 'state', description: 'task state', enum: TASK_STATES },
      { name: 'concurrency_key', description: 'resource key' },
      { name: 'business_key', description: 'caller correlation id' },
      limit,
      cursor,
    ],
  },
  'GET /v1/tasks/{id}': { summary: 'read a task', scope: 'tasks:read', status: 200, returns: '{task}', errors: ['NOT_FOUND'] },
  'GET /v1/tasks/{id}/attempts': { summary: 'attempts of a task, with tokens', scope: 'tasks:read', status: 200, returns: '{attempts}', errors: ['NOT_FOUND'] },
  'POST /v1/tasks/{id}:cancel': {
    summary: 'cancel a task',
    scope: 'tasks:submit',
    body: CancelTaskBody,
    idempotent: true,
    status: 200,
    returns: '{task, deduplicated}',
    errors: ['NOT_FOUND', 'STATE_CONFLICT', 'IDEMPOTENCY_CONFLICT'],
  },
  'POST /v1/tasks/{id}:resolve': {
    summary: 'resolve a NEEDS_REVIEW task',
    scope: 'tasks:submit',
    body: ResolveTaskBody,
    idempotent: true,
    status: 200,
    returns: '{task, deduplicated}',
    errors: ['NOT_FOUND', 'STATE_CONFLICT', 'IDEMPOTENCY_CONFLICT'],
  },
  'GET /v1/attempts/{id}': { summary: 'read an attempt', scope: 'tasks:read', status: 200, returns: '{attempt}', errors: ['NOT_FOUND'] },
  'POST /v1/queues': {
    summary: 'create a queue',
    scope: 'queues:manage',
    body: CreateQueueBody,
    idempotent: true,
    status: 201,
    returns: '{queue, deduplicated}',
    errors: ['STATE_CONFLICT', 'IDEMPOTENCY_CONFLICT'],
  },
  'GET /v1/queues': { summary: 'list queues (names and ids)', scope: 'queues:manage', status: 200, returns: '{queues}', errors: [] },
  'GET /v1/queues/{id}': { summary: 'read a queue', scope: 'queues:manage', status: 200, returns: '{queue}', errors: ['NOT_FOUND'] },
  'POST /v1/queues/{id}:pause': revisionCmd('pause a queue', 'queues:manage', '{queue, deduplicated}'),
  'POST /v1/queues/{id}:resume': revisionCmd('resume a queue', 'queues:manage', '{queue, deduplicated}'),
  'POST /v1/queues/{id}:retire': {
    summary: 'retire a queue (irreversible)',
    scope: 'queues:manage',
    body: RetireBody,
    idempotent: true,
    status: 200,
    returns: '{queue, deduplicated}',
    errors: ['NOT_FOUND', 'STATE_CONFLICT', 'RESOURCE_BUSY', 'IDEMPOTENCY_CONFLICT'],
  },
  'POST /v1/subscriptions': {
    summary: 'create a result-stream subscription',
    scope: 'events:manage',
    body: CreateSubscriptionBody,
    idempotent: true,
    status: 201,
    returns: '{subscription, deduplicated}',
    errors: ['NOT_FOUND', 'STATE_CONFLICT', 'RESOURCE_RETIRED', 'QUOTA_EXCEEDED', 'IDEMPOTENCY_CONFLICT'],
  },
  'POST /v1/schedules': {
    summary: 'create a schedule with its first version',
    scope: 'schedules:manage',
    body: CreateScheduleBody,
    idempotent: true,
    status: 201,
    returns: '{schedule, version, deduplicated}',
    errors: ['NOT_FOUND', 'PERMISSION_DENIED', 'RESOURCE_RETIRED', 'IDEMPOTENCY_CONFLICT', 'STATE_CONFLICT'],
  },
  'GET /v1/schedules': {
    summary: 'list schedules by name',
    scope: 'schedules:manage',
    orScopes: ['tasks:read'],
    status: 200,
    returns: '{schedules, next_cursor}',
    errors: [],
    query: [limit, cursor],
  },
  'GET /v1/schedules/{id}': {
    summary: 'read a schedule',
    scope: 'schedules:manage',
    orScopes: ['tasks:read'],
    status: 200,
    returns: '{schedule}',
    errors: ['NOT_FOUND'],
  },
  'POST /v1/schedules/{id}/versions': {
    summary: 'publish a new immutable version (expected_revision)',
    scope: 'schedules:manage',
    body: PublishVersionBody,
    idempotent: true,
    status: 201,
    returns: '{schedule, version, deduplicated}',
    errors: ['NOT_FOUND', 'STATE_CONFLICT', 'RESOURCE_RETIRED', 'IDEMPOTENCY_CONFLICT'],
  },
  'GET /v1/schedules/{id}/versions': {
    summary: 'versions of a schedule',
    scope: 'schedules:manage',
    orScopes: ['tasks:read'],
    status: 200,
    returns: '{versions}',
    errors: ['NOT_FOUND'],
  },
  'GET /v1/schedules/{id}/versions/{n}': {
    summary: 'one version',
    scope: 'schedules:manage',
    orScopes: ['tasks:read'],
    status: 200,
    returns: '{version}',
    errors: ['NOT_FOUND'],
  },
  'GET /v1/schedules/{id}/fires': {
    summary: 'fire history, newest first',
    scope: 'schedules:manage',
    orScopes: ['tasks:read'],
    status: 200,
    returns: '{fires, next_cursor}',
    errors: ['NOT_FOUND'],
    query: [limit, cursor],
  },
  'POST /v1/schedules/{id}:pause': revisionCmd('pause a schedule', 'schedules:manage', '{schedule, deduplicated}'),
  'POST /v1/schedules/{id}:resume': {
    ...revisionCmd('resume a schedule', 'schedules:manage', '{schedule, deduplicated}'),
    errors: ['NOT_FOUND', 'STATE_CONFLICT', 'RESOURCE_RETIRED', 'IDEMPOTENCY_CONFLICT'],
  },
  'POST /v1/schedules/{id}:trigger': {
    summary: 'create one task now from the current version',
    scope: 'schedules:manage',
    body: TriggerScheduleBody,
    idempotent: true,
    status: 201,
    returns: '{task, deduplicated}',
    errors: ['NOT_FOUND', 'STATE_CONFLICT', 'RESOURCE_RETIRED', 'QUOTA_EXCEEDED', 'IDEMPOTENCY_CONFLICT'],
  },
  'POST /v1/schedules/{id}:retire': {
    summary: 'retire a paused schedule (irreversible)',
    scope: 'schedules:manage',
    body: RetireBody,
    idempotent: true,
    status: 200,
    returns: '{schedule, deduplicated}',
    errors: ['NOT_FOUND', 'STATE_CONFLICT', 'IDEMPOTENCY_CONFLICT'],
  },
  'GET /v1/subscriptions': { summary: "list this credential's subscriptions", scope: 'events:read', status: 200, returns: '{subscriptions}', errors: [] },
  'GET /v1/subscriptions/{id}': { summary: 'read a subscription', scope: 'events:read', status: 200, returns: '{subscription}', errors: ['NOT_FOUND'] },
  'GET /v1/subscriptions/{id}/deliveries': {
    summary: 'delivery history by sequence',
    scope: 'events:read',
    status: 200,
    returns: '{deliveries, next_cursor}',
    errors: ['NOT_FOUND'],
    query: [{ name: 'state', description: 'delivery state', enum: DELIVERY_STATES }, limit, cursor],
  },
  'POST /v1/subscriptions/{id}/deliveries:lease': {
    summary: 'lease deliveries (no Idempotency-Key)',
    scope: 'events:read',
    body: LeaseDeliveriesBody,
    status: 200,
    returns: '{deliveries}',
    errors: ['NOT_FOUND', 'RESOURCE_RETIRED', 'EVENT_HISTORY_EXPIRED'],
  },
  'POST /v1/subscriptions/{id}/deliveries:ack': {
    summary: 'acknowledge deliveries',
    scope: 'events:read',
    body: AckDeliveriesBody,
    status: 200,
    returns: '{acked}',
    errors: ['NOT_FOUND'],
  },
  'POST /v1/subscriptions/{id}:pause': revisionCmd('pause a subscription', 'events:manage', '{subscription, deduplicated}'),
  'POST /v1/subscriptions/{id}:resume': revisionCmd('resume a subscription', 'events:manage', '{subscription, deduplicated}'),
  'POST /v1/subscriptions/{id}:retire': {
    summary: 'retire a subscription (irreversible)',
    scope: 'events:manage',
    body: RetireBody,
    idempotent: true,
    status: 200,
    returns: '{subscription, deduplicated}',
    errors: ['NOT_FOUND', 'STATE_CONFLICT', 'RESOURCE_BUSY', 'EVENT_HISTORY_EXPIRED', 'IDEMPOTENCY_CONFLICT'],
  },
};
