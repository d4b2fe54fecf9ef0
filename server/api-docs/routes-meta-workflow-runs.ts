// The OpenAPI metadata of the workflow run routes, spread into ROUTE_META.
import { CancelWorkflowRunBody, PauseWorkflowRunBody, ResumeWorkflowRunBody, SendSignalBody, StartWorkflowRunBody } from '@orbit/protocol/workflow-schemas';
import { WORKFLOW_RUN_STATES } from '@orbit/protocol/states';
import { cursor, limit, type RouteMeta } from './route-meta-type.js';

const runCommand = (summary: string, description: string, body: RouteMeta['body']): RouteMeta => ({
  summary,
  description,
  scopes: ['workflows:run'],
  body,
  idempotent: true,
  returns: '{run, deduplicated}',
  errors: ['STATE_CONFLICT'],
});

export const WORKFLOW_RUN_ROUTE_META: Record<string, RouteMeta> = {
  'POST /v1/workflows/{id}/runs': {
    summary: 'Start a workflow run',
    description:
      'Starts a run of the current (or a named) version; its root steps start in the same transaction. A retired workflow, or a version naming a retired queue, is RESOURCE_RETIRED.',
    scopes: ['workflows:run'],
    body: StartWorkflowRunBody,
    idempotent: true,
    status: 201,
    returns: '{run, deduplicated}',
    errors: ['RESOURCE_RETIRED', 'QUOTA_EXCEEDED'],
  },
  'POST /v1/workflow-runs/{id}:pause': runCommand(
    'Pause a workflow run',
    'Pauses a run: no new step tasks are created; steps that may start become READY.',
    PauseWorkflowRunBody,
  ),
  'POST /v1/workflow-runs/{id}:resume': runCommand(
    'Resume a workflow run',
    "Resumes a paused run: the READY steps' tasks are created in its transaction.",
    ResumeWorkflowRunBody,
  ),
  'POST /v1/workflow-runs/{id}:cancel': runCommand(
    'Cancel a workflow run',
    'Cancels a run: its WAITING and LEASED tasks are cancelled (permits released, task.cancel sent), RUNNING ones are recorded when they finish.',
    CancelWorkflowRunBody,
  ),
  'POST /v1/workflow-runs/{id}/signals': runCommand(
    'Send a signal to a workflow run',
    'Sends a named signal: the step waiting for it succeeds with the payload; sent early, it is kept until the step starts.',
    SendSignalBody,
  ),
  'GET /v1/workflow-runs': {
    summary: 'List workflow runs',
    description: 'Runs newest first, filtered by workflow and state, without their steps and input.',
    scopes: ['workflows:manage', 'workflows:run', 'tasks:read'],
    returns: '{runs, next_cursor}',
    query: [
      { name: 'workflow_id', description: 'only the runs of this workflow' },
      { name: 'state', description: 'only the runs in this state', enum: WORKFLOW_RUN_STATES },
      limit,
      cursor,
    ],
  },
  'GET /v1/workflow-runs/{id}': {
    summary: 'Read a workflow run',
    description: 'One run with its steps: their task ids in element order, outputs, errors and times.',
    scopes: ['workflows:manage', 'workflows:run', 'tasks:read'],
    returns: '{run}',
  },
};
