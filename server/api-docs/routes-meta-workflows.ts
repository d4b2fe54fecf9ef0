// The OpenAPI metadata of the workflow definition and run routes, spread into ROUTE_META.
import {
  CancelWorkflowRunBody,
  CreateWorkflowBody,
  PauseWorkflowRunBody,
  PublishWorkflowVersionBody,
  ResumeWorkflowRunBody,
  RetireWorkflowBody,
  SendSignalBody,
  StartWorkflowRunBody,
} from '@orbit/protocol/workflow-schemas';
import type { TSchema } from '@sinclair/typebox';
import { WORKFLOW_RUN_STATES } from '@orbit/protocol/states';
import { command, cursor, limit, reader, type RouteMeta } from './route-meta-type.js';

/** Workflows and runs are readable with any workflow scope or tasks:read. */
const read = reader(['workflows:manage', 'workflows:run', 'tasks:read']);

const runCommand = (summary: string, description: string, body: TSchema): RouteMeta => ({
  summary,
  description,
  ...command('workflows:run', body),
  returns: '{run, deduplicated}',
  errors: ['STATE_CONFLICT'],
});

export const WORKFLOW_ROUTE_META: Record<string, RouteMeta> = {
  'POST /v1/workflows': {
    summary: 'Create a workflow',
    description:
      'Creates a workflow with its first version, a graph of steps (docs/workflows.md). The name is unique in the namespace forever; a namespace holds 1 000 non-retired workflows.',
    ...command('workflows:manage', CreateWorkflowBody),
    status: 201,
    returns: '{workflow, version, deduplicated}',
    errors: ['NOT_FOUND', 'STATE_CONFLICT', 'RESOURCE_RETIRED', 'QUOTA_EXCEEDED'],
  },
  'GET /v1/workflows': {
    ...read('List workflows', "The namespace's workflows by name.", '{workflows, next_cursor}'),
    query: [limit, cursor],
  },
  'GET /v1/workflows/{id}': read('Read a workflow', 'One workflow with its current version number, revision and state.', '{workflow}'),
  'POST /v1/workflows/{id}/versions': {
    summary: 'Publish a workflow version',
    description:
      'Publishes version n+1 (expected_revision): runs started later use it, running runs keep theirs. A version naming a retired queue is RESOURCE_RETIRED.',
    ...command('workflows:manage', PublishWorkflowVersionBody),
    status: 201,
    returns: '{workflow, version, deduplicated}',
    errors: ['STATE_CONFLICT', 'RESOURCE_RETIRED'],
  },
  'GET /v1/workflows/{id}/versions': read('List workflow versions', 'Every version of the workflow, oldest first.', '{versions}'),
  'GET /v1/workflows/{id}/versions/{n}': read('Read a workflow version', 'One immutable version of the workflow by number, with its steps.', '{version}'),
  'POST /v1/workflows/{id}:retire': {
    summary: 'Retire a workflow',
    description: 'Retires a workflow, irreversibly: refused with RESOURCE_BUSY while a run is RUNNING or PAUSED, naming up to 10 run ids.',
    ...command('workflows:manage', RetireWorkflowBody),
    returns: '{workflow, deduplicated}',
    errors: ['STATE_CONFLICT', 'RESOURCE_RETIRED', 'RESOURCE_BUSY'],
  },
  'POST /v1/workflows/{id}/runs': {
    summary: 'Start a workflow run',
    description:
      'Starts a run of the current (or a named) version; its root steps start in the same transaction. A retired workflow, or a version naming a retired queue, is RESOURCE_RETIRED.',
    ...command('workflows:run', StartWorkflowRunBody),
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
    ...read('List workflow runs', 'Runs newest first, filtered by workflow and state, without their steps and input.', '{runs, next_cursor}'),
    query: [
      { name: 'workflow_id', description: 'only the runs of this workflow' },
      { name: 'state', description: 'only the runs in this state', enum: WORKFLOW_RUN_STATES },
      limit,
      cursor,
    ],
  },
  'GET /v1/workflow-runs/{id}': read('Read a workflow run', 'One run with its steps: their task ids in element order, outputs, errors and times.', '{run}'),
};
