// What the OpenAPI document says about each route. test/api-docs.test.ts checks that every route
// has an entry here and that the scopes are the ones the handlers enforce.
import { command, cursor, lifecycleRoutes, limit, reader, type RouteMeta } from './route-meta-type.js';
import { MAX_BATCH_ITEMS } from '@orbit/protocol/limits';
import { DELIVERY_STATES, TASK_STATES } from '@orbit/protocol/states';
import {
  AckDeliveriesBody,
  CancelTaskBody,
  CreateQueueBody,
  CreateSubscriptionBody,
  LeaseDeliveriesBody,
  ResolveTaskBody,
  SubmitBatchBody,
  SubmitTaskBody,
} from '@orbit/protocol/http-schemas';
import { SCHEDULE_ROUTE_META } from './routes-meta-schedules.js';
import { WORKFLOW_ROUTE_META } from './routes-meta-workflows.js';

const publicRead = reader();
const taskRead = reader(['tasks:read']);
const queueRead = reader(['queues:manage']);
const eventRead = reader(['events:read']);

export const ROUTE_META: Record<string, RouteMeta> = {
  'GET /healthz': publicRead('Liveness', 'Answers as long as the process serves HTTP; it touches no database (docs/http-api.md "Health").', '{status:"ok"}'),
  'GET /readyz': {
    summary: 'Readiness',
    description: 'Ready when the database answers and its schema is the one this gateway expects; 503 while shutting down.',
    returns: '{status:"ready",schema_version}',
    errors: ['UNAVAILABLE'],
  },
  'GET /metrics': {
    ...publicRead('Prometheus metrics', "The node's metrics in the Prometheus text format, not an envelope (docs/operations.md).", 'text/plain metrics'),
    contentType: 'text/plain',
  },
  'GET /v1/openapi.json': publicRead(
    'OpenAPI document',
    'This document: the HTTP API as OpenAPI 3.1, generated from the schemas the gateway validates with (not an envelope).',
    'the OpenAPI 3.1 document',
  ),
  'GET /v1/asyncapi.json': publicRead(
    'AsyncAPI document',
    'The worker WebSocket protocol as AsyncAPI 3.1, generated from the frame schemas (not an envelope).',
    'the AsyncAPI 3.1 document',
  ),
  'GET /v1/docs': {
    summary: 'API reference page',
    description:
      'This document rendered as a browsable reference (Redoc), served with every script it needs by the gateway itself; it reads /v1/openapi.json and loads nothing from other hosts.',
    returns: 'an HTML page',
    contentType: 'text/html',
  },
  'GET /v1/docs/redoc.standalone.js': {
    ...publicRead('API reference renderer', 'The Redoc script the reference page runs; 404 on a node whose build did not include it.', 'JavaScript'),
    errors: ['NOT_FOUND'],
    contentType: 'text/javascript',
  },
  'POST /v1/tasks': {
    summary: 'Submit a task',
    description:
      'Accepts a task into a queue of the credential\'s namespace; it waits there until a worker session is assigned it. A busy resource key never refuses a task: it waits (docs/http-api.md "Submit").',
    ...command('tasks:submit', SubmitTaskBody),
    status: 201,
    returns: '{task, deduplicated} (200 with deduplicated:true on replay)',
    errors: ['NOT_FOUND', 'RESOURCE_RETIRED', 'QUOTA_EXCEEDED'],
  },
  'POST /v1/tasks:batch': {
    summary: 'Submit many tasks',
    description: `Submits 1-${MAX_BATCH_ITEMS} tasks, each item its own command with its own \`idempotency_key\` (not atomic; the header is refused). Per-item refusals are slots of the answer, not errors.`,
    scopes: ['tasks:submit'],
    body: SubmitBatchBody,
    returns: '{results: [{status, data: {task, deduplicated}} | {status, error}]} in item order; per-item refusals are slots, not errors',
  },
  'GET /v1/queues/{id}/stats': reader(['tasks:read', 'queues:manage'])(
    'Queue statistics',
    'Counts of tasks by state, permits in use, the oldest waiting task, and 15 one-minute buckets of outcomes.',
    '{stats}',
  ),
  'GET /v1/workers': {
    summary: 'List connected workers',
    description: 'The worker sessions of the namespace connected to any node, with their queues, capacity and held attempts.',
    scopes: ['queues:manage'],
    returns: '{workers}',
    errors: ['NOT_FOUND'],
    query: [{ name: 'queue_id', description: 'only sessions consuming this queue' }],
  },
  'GET /v1/tasks': {
    summary: 'List tasks',
    description: 'Tasks newest first, filtered by queue, state, resource key or business key; summaries leave out the payload and the output.',
    scopes: ['tasks:read'],
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
  'GET /v1/tasks/{id}': taskRead('Read a task', 'One task with its payload, state and result.', '{task}'),
  'GET /v1/tasks/{id}/attempts': taskRead(
    'List attempts of a task',
    'Every attempt of the task by attempt number, with the fencing token of each when the task has a resource key.',
    '{attempts}',
  ),
  'POST /v1/tasks/{id}:cancel': {
    summary: 'Cancel a task',
    description:
      'Cancels a task that has not started (WAITING or LEASED): its leased attempt ends, its permits are released and the worker is sent task.cancel.',
    ...command('tasks:submit', CancelTaskBody),
    returns: '{task, deduplicated}',
    errors: ['STATE_CONFLICT'],
  },
  'POST /v1/tasks/{id}:resolve': {
    summary: 'Resolve a task under review',
    description: 'Records the outcome of a NEEDS_REVIEW task (one whose effect is unknown), as decided by a person or a reconciler.',
    ...command('tasks:submit', ResolveTaskBody),
    returns: '{task, deduplicated}',
    errors: ['STATE_CONFLICT'],
  },
  'GET /v1/attempts/{id}': taskRead('Read an attempt', 'One lease of a task to one worker: its state, times, outcome and fencing token.', '{attempt}'),
  'POST /v1/queues': {
    summary: 'Create a queue',
    description: 'Creates a queue of the namespace with its lease, retry and concurrency settings; the name is unique in the namespace.',
    ...command('queues:manage', CreateQueueBody),
    status: 201,
    returns: '{queue, deduplicated}',
    errors: ['STATE_CONFLICT'],
  },
  'GET /v1/queues': queueRead('List queues', "The namespace's queues, names and ids, retired ones included.", '{queues}'),
  'GET /v1/queues/{id}': queueRead('Read a queue', 'One queue with its settings, revision and state.', '{queue}'),
  ...lifecycleRoutes(
    '/v1/queues',
    'queue',
    'queues:manage',
    {
      pause: 'Stops assignments from the queue (expected_revision); it still accepts tasks, which wait. A retired queue is a STATE_CONFLICT.',
      resume: 'Lets a paused queue assign its waiting tasks again (expected_revision). A retired queue is a STATE_CONFLICT.',
      retire:
        'Retires a queue, irreversibly: refused with RESOURCE_BUSY while it has unfinished tasks, live attempts, undelivered events, a live subscription, an enabled schedule or an unfinished workflow run naming it (docs/http-api.md "Retirement").',
    },
    { retire: ['RESOURCE_BUSY'] },
  ),
  'POST /v1/subscriptions': {
    summary: 'Create a subscription',
    description: "Creates a result-stream subscription on a queue, starting at the stream's current end and owned by this credential.",
    ...command('events:manage', CreateSubscriptionBody),
    status: 201,
    returns: '{subscription, deduplicated}',
    errors: ['NOT_FOUND', 'STATE_CONFLICT', 'RESOURCE_RETIRED', 'QUOTA_EXCEEDED'],
  },
  'GET /v1/subscriptions': eventRead(
    'List subscriptions',
    'The subscriptions this credential owns; those of other credentials are not shown.',
    '{subscriptions}',
  ),
  'GET /v1/subscriptions/{id}': eventRead(
    'Read a subscription',
    'One subscription of this credential with its position in the stream and its counts of deliveries.',
    '{subscription}',
  ),
  'GET /v1/subscriptions/{id}/deliveries': {
    ...eventRead('List deliveries', "The subscription's deliveries by stream sequence, filtered by state.", '{deliveries, next_cursor}'),
    query: [{ name: 'state', description: 'delivery state', enum: DELIVERY_STATES }, limit, cursor],
  },
  'POST /v1/subscriptions/{id}/deliveries:lease': {
    summary: 'Lease deliveries',
    description: 'Leases the next deliveries of the subscription for a while (no Idempotency-Key); unacknowledged ones come back when the lease ends.',
    scopes: ['events:read'],
    body: LeaseDeliveriesBody,
    returns: '{deliveries}',
    errors: ['RESOURCE_RETIRED', 'EVENT_HISTORY_EXPIRED'],
  },
  'POST /v1/subscriptions/{id}/deliveries:ack': {
    summary: 'Acknowledge deliveries',
    description: 'Acknowledges leased deliveries by id; acknowledging one again changes nothing (no Idempotency-Key).',
    scopes: ['events:read'],
    body: AckDeliveriesBody,
    returns: '{acked}',
  },
  ...lifecycleRoutes(
    '/v1/subscriptions',
    'subscription',
    'events:manage',
    {
      pause: 'Stops leasing from the subscription (expected_revision); the stream keeps its events. A retired subscription is a STATE_CONFLICT.',
      resume: 'Lets a paused subscription lease again (expected_revision). A retired subscription is a STATE_CONFLICT.',
      retire: 'Retires a subscription, irreversibly: refused with RESOURCE_BUSY while deliveries are not acknowledged.',
    },
    { retire: ['RESOURCE_BUSY', 'EVENT_HISTORY_EXPIRED'] },
  ),
  ...SCHEDULE_ROUTE_META,
  ...WORKFLOW_ROUTE_META,
};
