import { OrbitError } from '@orbit/protocol/errors';
import { CancelTaskBody, ResolveTaskBody } from '@orbit/protocol/http-schemas';
import { taskView } from '../db/tasks.js';
import { attemptView, getAttempt, listTaskAttempts } from '../db/attempts.js';
import { cancelTask, resolveTask, type CommandEffect } from '../dispatch/task-commands.js';
import { requireQueueAccess } from '../admin/access.js';
import { afterLoading, command, scopedRoute } from './command.js';
import type { RequestCtx } from './context.js';
import { loadTask } from './routes-tasks.js';

export const listAttemptsRoute = scopedRoute(['tasks:read'], async (ctx) => {
  const t = await loadTask(ctx);
  const rows = await listTaskAttempts(ctx.app.pool, ctx.cred.namespaceId, t.id);
  return { attempts: rows.map(attemptView) };
});

export const getAttemptRoute = scopedRoute(['tasks:read'], async (ctx) => {
  const a = await getAttempt(ctx.app.pool, ctx.cred.namespaceId, ctx.params.id!);
  if (!a) throw new OrbitError('NOT_FOUND', 'attempt not found');
  requireQueueAccess(ctx.cred, a.queue_id);
  return { attempt: attemptView(a) };
});

function afterEffect(e: CommandEffect, ctx: RequestCtx): void {
  ctx.app.signals.revoked(e.revoked);
  ctx.app.signals.wake(e.freedQueues);
}

function taskReply(e: CommandEffect) {
  return { data: { task: taskView(e.task) }, resourceId: e.task.id };
}

const loaded = afterLoading(loadTask);

export const cancelTaskRoute = command({
  operation: 'POST /v1/tasks/{id}:cancel',
  scope: 'tasks:submit',
  body: CancelTaskBody,
  load: loaded,
  effect: (c, b, { app, cred, params }) => cancelTask(c, app.advanceSteps, cred.namespaceId, params.id!, b.reason),
  reply: taskReply,
  afterCommit: afterEffect,
});

export const resolveTaskRoute = command({
  operation: 'POST /v1/tasks/{id}:resolve',
  scope: 'tasks:submit',
  body: ResolveTaskBody,
  load: loaded,
  effect: (c, b, { app, cred, params }) => resolveTask(c, app.advanceSteps, cred.namespaceId, params.id!, b.resolution, b.reason),
  reply: taskReply,
  afterCommit: afterEffect,
});
