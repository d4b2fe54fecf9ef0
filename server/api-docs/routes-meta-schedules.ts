// The OpenAPI metadata of the schedule routes, spread into ROUTE_META.
import { CreateScheduleBody, PublishVersionBody, RetireBody, TriggerScheduleBody } from '@orbit/protocol/http-schemas';
import { cursor, limit, revisionCmd, type RouteMeta } from './route-meta-type.js';

export const SCHEDULE_ROUTE_META: Record<string, RouteMeta> = {
  'POST /v1/schedules': {
    summary: 'Create a schedule',
    description: 'Creates a schedule with its first version: a calendar and the task it creates at each fire (docs/schedules.md).',
    scopes: ['schedules:manage'],
    body: CreateScheduleBody,
    idempotent: true,
    status: 201,
    returns: '{schedule, version, deduplicated}',
    errors: ['NOT_FOUND', 'RESOURCE_RETIRED', 'STATE_CONFLICT'],
  },
  'GET /v1/schedules': {
    summary: 'List schedules',
    description: "The namespace's schedules by name.",
    scopes: ['schedules:manage', 'tasks:read'],
    returns: '{schedules, next_cursor}',
    query: [limit, cursor],
  },
  'GET /v1/schedules/{id}': {
    summary: 'Read a schedule',
    description: 'One schedule with its current version number, revision, state and next fire time.',
    scopes: ['schedules:manage', 'tasks:read'],
    returns: '{schedule}',
  },
  'POST /v1/schedules/{id}/versions': {
    summary: 'Publish a schedule version',
    description:
      'Publishes version n+1 (expected_revision); fires after it use it. A retired schedule, or a version aimed at a retired queue, is RESOURCE_RETIRED.',
    scopes: ['schedules:manage'],
    body: PublishVersionBody,
    idempotent: true,
    status: 201,
    returns: '{schedule, version, deduplicated}',
    errors: ['STATE_CONFLICT', 'RESOURCE_RETIRED'],
  },
  'GET /v1/schedules/{id}/versions': {
    summary: 'List schedule versions',
    description: 'Every version of the schedule, oldest first.',
    scopes: ['schedules:manage', 'tasks:read'],
    returns: '{versions}',
  },
  'GET /v1/schedules/{id}/versions/{n}': {
    summary: 'Read a schedule version',
    description: 'One immutable version of the schedule by number.',
    scopes: ['schedules:manage', 'tasks:read'],
    returns: '{version}',
  },
  'GET /v1/schedules/{id}/fires': {
    summary: 'List schedule fires',
    description: 'The fire history of the schedule, newest first, with the task each fire created or why it created none.',
    scopes: ['schedules:manage', 'tasks:read'],
    returns: '{fires, next_cursor}',
    query: [limit, cursor],
  },
  // Every command on a retired schedule is refused with RESOURCE_RETIRED (docs/errors.md).
  'POST /v1/schedules/{id}:pause': revisionCmd(
    'Pause a schedule',
    'Stops the schedule firing (expected_revision).',
    'schedules:manage',
    '{schedule, deduplicated}',
    ['RESOURCE_RETIRED'],
  ),
  'POST /v1/schedules/{id}:resume': revisionCmd(
    'Resume a schedule',
    'Lets a paused schedule fire again from now on (expected_revision).',
    'schedules:manage',
    '{schedule, deduplicated}',
    ['RESOURCE_RETIRED'],
  ),
  'POST /v1/schedules/{id}:trigger': {
    summary: 'Trigger a schedule',
    description: "Creates one task now from the current version's template, outside the calendar.",
    scopes: ['schedules:manage'],
    body: TriggerScheduleBody,
    idempotent: true,
    status: 201,
    returns: '{task, deduplicated}',
    errors: ['STATE_CONFLICT', 'RESOURCE_RETIRED', 'QUOTA_EXCEEDED'],
  },
  'POST /v1/schedules/{id}:retire': {
    summary: 'Retire a schedule',
    description: 'Retires a paused schedule, irreversibly (expected_revision); an enabled one is a STATE_CONFLICT: pause it first.',
    scopes: ['schedules:manage'],
    body: RetireBody,
    idempotent: true,
    returns: '{schedule, deduplicated}',
    errors: ['STATE_CONFLICT', 'RESOURCE_RETIRED'],
  },
};
