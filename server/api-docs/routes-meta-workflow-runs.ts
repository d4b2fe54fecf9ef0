// The OpenAPI metadata of the workflow run routes, spread into ROUTE_META.
import { CancelWorkflowRunBody, PauseWorkflowRunBody, ResumeWorkflowRunBody, SendSignalBody, StartWorkflowRunBody } from '@orbit/protocol/workflow-schemas';
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from '@orbit/protocol/limits';
import { WORKFLOW_RUN_STATES } from '@orbit/protocol/states';
import type { RouteMeta } from './route-meta-type.js';

const runCommand = (summary: string, body: RouteMeta['body'], errors: RouteMeta['errors']): RouteMeta => ({
  summary,
  scope: 'workflows:run',
  body,
  idempotent: true,
  status: 200,
  returns: '{run, deduplicated}',
  errors: ['NOT_FOUND', 'PERMISSION_DENIED', 'STATE_CONFLICT', 'IDEMPOTENCY_CONFLICT', ...errors],
});

export const WORKFLOW_RUN_ROUTE_META: Record<string, RouteMeta> = {
  'POST /v1/workflows/{id}/runs': {
    summary: 'start a run of the current (or a named) version; its root steps start in the same transaction',
    scope: 'workflows:run',
    body: StartWorkflowRunBody,
    idempotent: true,
    status: 201,
    returns: '{run, deduplicated}',
    errors: ['NOT_FOUND', 'PERMISSION_DENIED', 'RESOURCE_RETIRED', 'QUOTA_EXCEEDED', 'PAYLOAD_TOO_LARGE', 'IDEMPOTENCY_CONFLICT'],
  },
  'POST /v1/workflow-runs/{id}:pause': runCommand('pause a run: no new step tasks; steps that may start become READY', PauseWorkflowRunBody, []),
  'POST /v1/workflow-runs/{id}:resume': runCommand("resume a paused run: the READY steps' tasks are created in its transaction", ResumeWorkflowRunBody, []),
  'POST /v1/workflow-runs/{id}:cancel': runCommand(
    'cancel a run: WAITING and LEASED tasks cancelled (permits released, task.cancel sent), RUNNING ones recorded when they finish',
    CancelWorkflowRunBody,
    [],
  ),
  'POST /v1/workflow-runs/{id}/signals': runCommand(
    'send a signal: its waiting step succeeds with the payload; sent early, it is kept until the step starts',
    SendSignalBody,
    ['PAYLOAD_TOO_LARGE'],
  ),
  'GET /v1/workflow-runs': {
    summary: 'list runs newest first (without steps and input)',
    scope: 'workflows:manage',
    orScopes: ['workflows:run', 'tasks:read'],
    status: 200,
    returns: '{runs, next_cursor}',
    errors: [],
    query: [
      { name: 'workflow_id', description: 'only the runs of this workflow' },
      { name: 'state', description: 'only the runs in this state', enum: WORKFLOW_RUN_STATES },
      { name: 'limit', description: `page size (default ${LIST_LIMIT_DEFAULT})`, integer: { minimum: 1, maximum: LIST_LIMIT_MAX } },
      { name: 'cursor', description: 'opaque cursor from next_cursor' },
    ],
  },
  'GET /v1/workflow-runs/{id}': {
    summary: 'read a run with its steps (task ids in element order, outputs, errors, times)',
    scope: 'workflows:manage',
    orScopes: ['workflows:run', 'tasks:read'],
    status: 200,
    returns: '{run}',
    errors: ['NOT_FOUND'],
  },
};
