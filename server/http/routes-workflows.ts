// Workflow definition commands and reads. Every body is validated completely before the command
// transaction starts, so bad input changes nothing; retired queues are refused inside it, under the
// queue locks. A credential limited to some queues sees the workflows whose current version names
// only queues it may use, as a schedule is seen through its queue.
import { OrbitError } from '@orbit/protocol/errors';
import { CreateWorkflowBody, PublishWorkflowVersionBody, type WorkflowVersionInput } from '@orbit/protocol/workflow-schemas';
import { getWorkflow, listWorkflows, workflowView, type WorkflowRow } from '../db/workflows.js';
import { getVersion, listVersions, versionQueueIds, workflowVersionView } from '../db/workflow-versions.js';
import { validateVersion, withQueueDefaults } from '../workflows/validate.js';
import { createWorkflow, publishWorkflowVersion, queueField, retireWorkflow, type VersionToStore } from '../workflows/definitions.js';
import { requireQueueAccess, type Scope } from '../admin/access.js';
import type { Credential } from '../db/credentials.js';
import { namedQueue } from './hints.js';
import { command, commandsOn, scopedRoute } from './command.js';
import { RetireBody } from '@orbit/protocol/http-schemas';
import type { RequestCtx } from './context.js';
import { asIs, pageByName, pathVersion } from './definition-routes.js';
import { noQuery } from './list-query.js';

/** max_attempts defaults are resolved here, so the default written out is the same command. */
async function versionToStore(ctx: RequestCtx, v: WorkflowVersionInput): Promise<VersionToStore> {
  const checked = validateVersion(v);
  const maxAttempts = new Map<string, number>();
  for (const id of checked.queueIds) {
    const q = await namedQueue(ctx, id, queueField(checked.steps, id));
    maxAttempts.set(q.id, q.retry_max_attempts);
  }
  return { steps: withQueueDefaults(checked.steps, (id) => maxAttempts.get(id)!), queueIds: checked.queueIds };
}

export function requireVersionAccess(cred: Credential, queueIds: readonly string[]): void {
  for (const q of queueIds) requireQueueAccess(cred, q);
}

async function loadWorkflow(ctx: RequestCtx): Promise<WorkflowRow> {
  const w = await getWorkflow(ctx.app.pool, ctx.cred.namespaceId, ctx.params.id!);
  if (!w) throw new OrbitError('NOT_FOUND', 'workflow not found');
  if (ctx.cred.queueIds !== '*') requireVersionAccess(ctx.cred, (await versionQueueIds(ctx.app.pool, w.id, Number(w.current_version))) ?? []);
  return w;
}

export const createWorkflowRoute = command({
  operation: 'POST /v1/workflows',
  scope: 'workflows:manage',
  body: CreateWorkflowBody,
  status: 201,
  load: async (ctx, b) => ({ name: b.name, version: await versionToStore(ctx, b.version) }),
  effect: (c, n, { cred }) => createWorkflow(c, cred, n),
  reply: asIs,
});

export const publishWorkflowVersionRoute = command({
  operation: 'POST /v1/workflows/{id}/versions',
  scope: 'workflows:manage',
  body: PublishWorkflowVersionBody,
  status: 201,
  load: async (ctx, b) => {
    // The version's rules first: a bad version is 400 even for an unknown workflow, as a bad body.
    const version = await versionToStore(ctx, b.version);
    await loadWorkflow(ctx);
    return { expected_revision: b.expected_revision, version };
  },
  effect: (c, n, { cred, params }) => publishWorkflowVersion(c, cred, params.id!, n),
  reply: asIs,
});

const onWorkflow = commandsOn({ path: '/v1/workflows', scope: 'workflows:manage', load: loadWorkflow, reply: asIs });
export const retireWorkflowRoute = onWorkflow('retire', RetireBody, (c, b, { cred, params }) => retireWorkflow(c, cred, params.id!, b));

/** Workflows and their runs are read with any of these. */
export const READ_SCOPES: Scope[] = ['workflows:manage', 'workflows:run', 'tasks:read'];

export const getWorkflowRoute = scopedRoute(READ_SCOPES, async (ctx) => {
  noQuery(ctx);
  return { workflow: workflowView(await loadWorkflow(ctx)) };
});

export const listWorkflowsRoute = scopedRoute(READ_SCOPES, async (ctx) => {
  const { page, next_cursor } = await pageByName(ctx, (after, limit) => listWorkflows(ctx.app.pool, ctx.cred.namespaceId, ctx.cred.queueIds, after, limit));
  return { workflows: page.map(workflowView), next_cursor };
});

/** Not paged. A credential limited to some queues sees the versions whose queues it may all use. */
export const listWorkflowVersionsRoute = scopedRoute(READ_SCOPES, async (ctx) => {
  noQuery(ctx);
  const w = await loadWorkflow(ctx);
  const cred = ctx.cred;
  const all = await listVersions(ctx.app.pool, w.id);
  const visible = cred.queueIds === '*' ? all : all.filter((v) => v.queueIds.every((q) => cred.queueIds.includes(q)));
  return { versions: visible.map(workflowVersionView) };
});

export const getWorkflowVersionRoute = scopedRoute(READ_SCOPES, async (ctx) => {
  noQuery(ctx);
  const w = await loadWorkflow(ctx);
  const v = await pathVersion(ctx, (n) => getVersion(ctx.app.pool, w.id, n));
  requireVersionAccess(ctx.cred, v.queueIds);
  return { version: workflowVersionView(v) };
});
