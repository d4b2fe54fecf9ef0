import { OrbitError } from '@orbit/protocol/errors';
import { CancelTaskBody, ResolveTaskBody } from '@orbit/protocol/http-schemas';
import { ID_RE } from '@orbit/protocol/validation';
import { taskView } from '../db/tasks.js';
import { attemptView, getAttempt, listTaskAttempts } from '../db/attempts.js';
import { cancelTask, resolveTask, type CommandEffect } from '../dispatch/task-commands.js';
import { requireQueueAccess, requireScope } from '../admin/access.js';
import { command } from './command.js';
import type { Reply, RequestCtx } from './context.js';
import { loadTask } from './routes-tasks.js';

export async function listAttemptsRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'tasks:read');
  const t = await loadTask(ctx, ctx.params.id!);
  const rows = await listTaskAttempts(ctx.app.pool, ctx.cred.namespaceId, t.id);
  return { status: 200, data: { attempts: rows.map(attemptView) } };
}

export async function getAttemptRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'tasks:read');
  const id = ctx.params.id!;
  const a = ID_RE.test(id) ? await getAttempt(ctx.app.pool, ctx.cred.namespaceId, id) : null;
  if (!a) throw new OrbitError('NOT_FOUND', 'attempt not found');
  requireQueueAccess(ctx.cred, a.queue_id);
  return { status: 200, data: { attempt: attemptView(a) } };
}

function afterEffect(e: CommandEffect, ctx: RequestCtx): void {
  ctx.app.signals.revoked(e.revoked);
  ctx.app.signals.wake(e.freedQueues);
}

function taskReply(e: CommandEffect) {
  return { data: { task: taskView(e.task) }, resourceId: e.task.id };
}

async function loaded<B>(ctx: RequestCtx, b: B): Promise<B> {
  await loadTask(ctx, ctx.params.id!);
  return b;
}

export const cancelTaskRoute = command({
  operation: 'POST /v1/tasks/{id}:cancel',
  scope: 'tasks:submit',
  body: CancelTaskBody,
  status: 200,
  load: loaded,
  effect: (c, b, { app, cred, params }) => cancelTask(c, app.advanceSteps, cred.namespaceId, params.id!, b.reason),
  reply: taskReply,
  afterCommit: afterEffect,
});

export const resolveTaskRoute = command({
  operation: 'POST /v1/tasks/{id}:resolve',
  scope: 'tasks:submit',
  body: ResolveTaskBody,
  status: 200,
  load: loaded,
  effect: (c, b, { app, cred, params }) => resolveTask(c, app.advanceSteps, cred.namespaceId, params.id!, b.resolution, b.reason),
  reply: taskReply,
  afterCommit: afterEffect,
});
