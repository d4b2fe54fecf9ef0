// The OpenAPI metadata of the workflow definition routes, spread into ROUTE_META.
import { CreateWorkflowBody, PublishWorkflowVersionBody, RetireWorkflowBody } from '@orbit/protocol/workflow-schemas';
import { cursor, limit, type RouteMeta } from './route-meta-type.js';

const read = (summary: string, description: string, returns: string): RouteMeta => ({
  summary,
  description,
  scopes: ['workflows:manage', 'workflows:run', 'tasks:read'],
  returns,
});

export const WORKFLOW_ROUTE_META: Record<string, RouteMeta> = {
  'POST /v1/workflows': {
    summary: 'Create a workflow',
    description:
      'Creates a workflow with its first version, a graph of steps (docs/workflows.md). The name is unique in the namespace forever; a namespace holds 1 000 non-retired workflows.',
    scopes: ['workflows:manage'],
    body: CreateWorkflowBody,
    idempotent: true,
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
    scopes: ['workflows:manage'],
    body: PublishWorkflowVersionBody,
    idempotent: true,
    status: 201,
    returns: '{workflow, version, deduplicated}',
    errors: ['STATE_CONFLICT', 'RESOURCE_RETIRED'],
  },
  'GET /v1/workflows/{id}/versions': read('List workflow versions', 'Every version of the workflow, oldest first.', '{versions}'),
  'GET /v1/workflows/{id}/versions/{n}': read('Read a workflow version', 'One immutable version of the workflow by number, with its steps.', '{version}'),
  'POST /v1/workflows/{id}:retire': {
    summary: 'Retire a workflow',
    description: 'Retires a workflow, irreversibly: refused with RESOURCE_BUSY while a run is RUNNING or PAUSED, naming up to 10 run ids.',
    scopes: ['workflows:manage'],
    body: RetireWorkflowBody,
    idempotent: true,
    returns: '{workflow, deduplicated}',
    errors: ['STATE_CONFLICT', 'RESOURCE_RETIRED', 'RESOURCE_BUSY'],
  },
};
