// The OpenAPI metadata of the schedule routes, spread into ROUTE_META.
import { CreateScheduleBody, PublishVersionBody, TriggerScheduleBody } from '@orbit/protocol/http-schemas';
import { command, cursor, lifecycleRoutes, limit, reader, type RouteMeta } from './route-meta-type.js';

const read = reader(['schedules:manage', 'tasks:read']);

export const SCHEDULE_ROUTE_META: Record<string, RouteMeta> = {
  'POST /v1/schedules': {
    summary: 'Create a schedule',
    description: 'Creates a schedule with its first version: a calendar and the task it creates at each fire (docs/schedules.md).',
    ...command('schedules:manage', CreateScheduleBody),
    status: 201,
    returns: '{schedule, version, deduplicated}',
    errors: ['NOT_FOUND', 'RESOURCE_RETIRED', 'STATE_CONFLICT'],
  },
  'GET /v1/schedules': {
    ...read('List schedules', "The namespace's schedules by name.", '{schedules, next_cursor}'),
    query: [limit, cursor],
  },
  'GET /v1/schedules/{id}': read('Read a schedule', 'One schedule with its current version number, revision, state and next fire time.', '{schedule}'),
  'POST /v1/schedules/{id}/versions': {
    summary: 'Publish a schedule version',
    description:
      'Publishes version n+1 (expected_revision); fires after it use it. A retired schedule, or a version aimed at a retired queue, is RESOURCE_RETIRED.',
    ...command('schedules:manage', PublishVersionBody),
    status: 201,
    returns: '{schedule, version, deduplicated}',
    errors: ['STATE_CONFLICT', 'RESOURCE_RETIRED'],
  },
  'GET /v1/schedules/{id}/versions': read('List schedule versions', 'Every version of the schedule, oldest first.', '{versions}'),
  'GET /v1/schedules/{id}/versions/{n}': read('Read a schedule version', 'One immutable version of the schedule by number.', '{version}'),
  'GET /v1/schedules/{id}/fires': {
    ...read(
      'List schedule fires',
      'The fire history of the schedule, newest first, with the task each fire created or why it created none.',
      '{fires, next_cursor}',
    ),
    query: [limit, cursor],
  },
  // Every command on a retired schedule is refused with RESOURCE_RETIRED (docs/errors.md).
  ...lifecycleRoutes(
    '/v1/schedules',
    'schedule',
    'schedules:manage',
    {
      pause: 'Stops the schedule firing (expected_revision).',
      resume: 'Lets a paused schedule fire again from now on (expected_revision).',
      retire: 'Retires a paused schedule, irreversibly (expected_revision); an enabled one is a STATE_CONFLICT: pause it first.',
    },
    { each: ['RESOURCE_RETIRED'] },
  ),
  'POST /v1/schedules/{id}:trigger': {
    summary: 'Trigger a schedule',
    description: "Creates one task now from the current version's template, outside the calendar.",
    ...command('schedules:manage', TriggerScheduleBody),
    status: 201,
    returns: '{task, deduplicated}',
    errors: ['STATE_CONFLICT', 'RESOURCE_RETIRED', 'QUOTA_EXCEEDED'],
  },
};
