// The OpenAPI metadata of the workflow definition routes, spread into ROUTE_META.
import { CreateWorkflowBody, PublishWorkflowVersionBody, RetireWorkflowBody } from '@orbit/protocol/workflow-schemas';
import { cursor, limit, type RouteMeta } from './route-meta-type.js';

const read = (summary: string, description: string, returns: string, errors: RouteMeta['errors']): RouteMeta => ({
  summary,
  description,
  scope: 'workflows:manage',
  orScopes: ['workflows:run', 'tasks:read'],
  status: 200,
  returns,
  errors,
});

export const WORKFLOW_ROUTE_META: Record<string, RouteMeta> = {
  'POST /v1/workflows': {
    summary: 'Create a workflow',
    description:
      'Creates a workflow with its first version, a graph of steps (docs/workflows.md). The name is unique in the namespace forever; a namespace holds 1 000 non-retired workflows.',
    scope: 'workflows:manage',
    body: CreateWorkflowBody,
    idempotent: true,
    status: 201,
    returns: '{workflow, version, deduplicated}',
    errors: ['NOT_FOUND', 'PERMISSION_DENIED', 'STATE_CONFLICT', 'RESOURCE_RETIRED', 'QUOTA_EXCEEDED', 'PAYLOAD_TOO_LARGE', 'IDEMPOTENCY_CONFLICT'],
  },
  'GET /v1/workflows': {
    ...read('List workflows', "The namespace's workflows by name.", '{workflows, next_cursor}', []),
    query: [limit, cursor],
  },
  'GET /v1/workflows/{id}': read('Read a workflow', 'One workflow with its current version number, revision and state.', '{workflow}', ['NOT_FOUND']),
  'POST /v1/workflows/{id}/versions': {
    summary: 'Publish a workflow version',
    description:
      'Publishes version n+1 (expected_revision): runs started later use it, running runs keep theirs. A version naming a retired queue is RESOURCE_RETIRED.',
    scope: 'workflows:manage',
    body: PublishWorkflowVersionBody,
    idempotent: true,
    status: 201,
    returns: '{workflow, version, deduplicated}',
    errors: ['NOT_FOUND', 'PERMISSION_DENIED', 'STATE_CONFLICT', 'RESOURCE_RETIRED', 'PAYLOAD_TOO_LARGE', 'IDEMPOTENCY_CONFLICT'],
  },
  'GET /v1/workflows/{id}/versions': read('List workflow versions', 'Every version of the workflow, oldest first.', '{versions}', ['NOT_FOUND']),
  'GET /v1/workflows/{id}/versions/{n}': read('Read a workflow version', 'One immutable version of the workflow by number, with its steps.', '{version}', [
    'NOT_FOUND',
  ]),
  'POST /v1/workflows/{id}:retire': {
    summary: 'Retire a workflow',
    description: 'Retires a workflow, irreversibly: refused with RESOURCE_BUSY while a run is RUNNING or PAUSED, naming up to 10 run ids.',
    scope: 'workflows:manage',
    body: RetireWorkflowBody,
    idempotent: true,
    status: 200,
    returns: '{workflow, deduplicated}',
    errors: ['NOT_FOUND', 'PERMISSION_DENIED', 'STATE_CONFLICT', 'RESOURCE_RETIRED', 'RESOURCE_BUSY', 'IDEMPOTENCY_CONFLICT'],
  },
};
