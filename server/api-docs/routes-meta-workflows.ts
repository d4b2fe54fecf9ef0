// The OpenAPI metadata of the workflow definition routes, spread into ROUTE_META.
import { CreateWorkflowBody, PublishWorkflowVersionBody, RetireWorkflowBody } from '@orbit/protocol/workflow-schemas';
import { cursor, limit, type RouteMeta } from './route-meta-type.js';

const read = (summary: string, returns: string, errors: RouteMeta['errors']): RouteMeta => ({
  summary,
  scope: 'workflows:manage',
  orScopes: ['workflows:run', 'tasks:read'],
  status: 200,
  returns,
  errors,
});

export const WORKFLOW_ROUTE_META: Record<string, RouteMeta> = {
  'POST /v1/workflows': {
    summary: 'create a workflow with its first version (name unique in the namespace forever; 1 000 non-retired per namespace)',
    scope: 'workflows:manage',
    body: CreateWorkflowBody,
    idempotent: true,
    status: 201,
    returns: '{workflow, version, deduplicated}',
    errors: ['NOT_FOUND', 'PERMISSION_DENIED', 'STATE_CONFLICT', 'RESOURCE_RETIRED', 'QUOTA_EXCEEDED', 'PAYLOAD_TOO_LARGE', 'IDEMPOTENCY_CONFLICT'],
  },
  'GET /v1/workflows': {
    ...read('list workflows by name', '{workflows, next_cursor}', []),
    query: [limit, cursor],
  },
  'GET /v1/workflows/{id}': read('read a workflow', '{workflow}', ['NOT_FOUND']),
  'POST /v1/workflows/{id}/versions': {
    summary: 'publish version n+1 (expected_revision); runs started later use it, running runs keep theirs',
    scope: 'workflows:manage',
    body: PublishWorkflowVersionBody,
    idempotent: true,
    status: 201,
    returns: '{workflow, version, deduplicated}',
    errors: ['NOT_FOUND', 'PERMISSION_DENIED', 'STATE_CONFLICT', 'RESOURCE_RETIRED', 'PAYLOAD_TOO_LARGE', 'IDEMPOTENCY_CONFLICT'],
  },
  'GET /v1/workflows/{id}/versions': read('versions of a workflow, oldest first', '{versions}', ['NOT_FOUND']),
  'GET /v1/workflows/{id}/versions/{n}': read('one version', '{version}', ['NOT_FOUND']),
  'POST /v1/workflows/{id}:retire': {
    summary: 'retire a workflow (irreversible; refused while a run is RUNNING or PAUSED, naming up to 10 run ids)',
    scope: 'workflows:manage',
    body: RetireWorkflowBody,
    idempotent: true,
    status: 200,
    returns: '{workflow, deduplicated}',
    errors: ['NOT_FOUND', 'PERMISSION_DENIED', 'STATE_CONFLICT', 'RESOURCE_RETIRED', 'RESOURCE_BUSY', 'IDEMPOTENCY_CONFLICT'],
  },
};
