// The OpenAPI metadata of the workflow run routes, spread into ROUTE_META.
import { CancelWorkflowRunBody, PauseWorkflowRunBody, ResumeWorkflowRunBody, SendSignalBody, StartWorkflowRunBody } from '@orbit/protocol/workflow-schemas';
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from '@orbit/protocol/limits';
import { WORKFLOW_RUN_STATES } from '@orbit/protocol/states';
import type { RouteMeta } from './route-meta-type.js';

const runCommand = (summary: string, description: string, body: RouteMeta['body'], errors: RouteMeta['errors']): RouteMeta => ({
  summary,
  description,
  scope: 'workflows:run',
  body,
  idempotent: true,
  status: 200,
  returns: '{run, deduplicated}',
  errors: ['NOT_FOUND', 'PERMISSION_DENIED', 'STATE_CONFLICT', 'IDEMPOTENCY_CONFLICT', ...errors],
});

export const WORKFLOW_RUN_ROUTE_META: Record<string, RouteMeta> = {
  'POST /v1/workflows/{id}/runs': {
    summary: 'Start a workflow run',
    description:
      'Starts a run of the current (or a named) version; its root steps start in the same transaction. A retired workflow, or a version naming a retired queue, is RESOURCE_RETIRED.',
    scope: 'workflows:run',
    body: StartWorkflowRunBody,
    idempotent: true,
    status: 201,
    returns: '{run, deduplicated}',
    errors: ['NOT_FOUND', 'PERMISSION_DENIED', 'RESOURCE_RETIRED', 'QUOTA_EXCEEDED', 'PAYLOAD_TOO_LARGE', 'IDEMPOTENCY_CONFLICT'],
  },
  'POST /v1/workflow-runs/{id}:pause': runCommand(
    'Pause a workflow run',
    'Pauses a run: no new step tasks are created; steps that may start become READY.',
    PauseWorkflowRunBody,
    [],
  ),
  'POST /v1/workflow-runs/{id}:resume': runCommand(
    'Resume a workflow run',
    "Resumes a paused run: the READY steps' tasks are created in its transaction.",
    ResumeWorkflowRunBody,
    [],
  ),
  'POST /v1/workflow-runs/{id}:cancel': runCommand(
    'Cancel a workflow run',
    'Cancels a run: its WAITING and LEASED tasks are cancelled (permits released, task.cancel sent), RUNNING ones are recorded when they finish.',
    CancelWorkflowRunBody,
    [],
  ),
  'POST /v1/workflow-runs/{id}/signals': runCommand(
    'Send a signal to a workflow run',
    'Sends a named signal: the step waiting for it succeeds with the payload; sent early, it is kept until the step starts.',
    SendSignalBody,
    ['PAYLOAD_TOO_LARGE'],
  ),
  'GET /v1/workflow-runs': {
    summary: 'List workflow runs',
    description: 'Runs newest first, filtered by workflow and state, without their steps and input.',
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
    summary: 'Read a workflow run',
    description: 'One run with its steps: their task ids in element order, outputs, errors and times.',
    scope: 'workflows:manage',
    orScopes: ['workflows:run', 'tasks:read'],
    status: 200,
    returns: '{run}',
    errors: ['NOT_FOUND'],
  },
};
