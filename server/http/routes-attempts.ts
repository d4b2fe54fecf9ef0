import { OrbitError } from '@orbit/protocol/errors';
import { CancelTaskBody, ResolveTaskBody } from '@orbit/protocol/http-schemas';
import { ID_RE } from '@orbit/protocol/validation';
import { taskView } from '../db/tasks.js';
import { attemptView, getAttempt, listTaskAttempts } from '../dispatch/attempts-sql.js';
import { cancelTask, resolveTask, type CommandEffect } from '../dispatch/task-commands.js';
import { requireQueueAccess, requireScope } from './auth.js';
import { idempotencyKey, readBody, rejectQuery, runCommand } from './command.js';
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

function afterEffect(ctx: RequestCtx, effect: { current?: CommandEffect }) {
  return () => {
    const e = effect.current;
    if (!e) return;
    ctx.app.signals.revoked(e.revoked);
    ctx.app.signals.wake(e.freedQueues);
  };
}

export async function cancelTaskRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'tasks:submit');
  rejectQuery(ctx);
  const key = idempotencyKey(ctx);
  const b = await readBody(ctx, CancelTaskBody);
  const t = await loadTask(ctx, ctx.params.id!);
  const effect: { current?: CommandEffect } = {};
  return runCommand(ctx, key, {
    operation: 'POST /v1/tasks/{id}:cancel',
    targetId: t.id,
    normalized: b,
    status: 200,
    effect: async (c) => {
      effect.current = await cancelTask(c, ctx.cred.namespaceId, t.id, b.reason);
      return { data: { task: taskView(effect.current.task) }, resourceId: t.id };
    },
    afterCommit: afterEffect(ctx, effect),
  });
}

export async function resolveTaskRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'tasks:submit');
  rejectQuery(ctx);
  const key = idempotencyKey(ctx);
  const b = await readBody(ctx, ResolveTaskBody);
  const t = await loadTask(ctx, ctx.params.id!);
  const effect: { current?: CommandEffect } = {};
  return runCommand(ctx, key, {
    operation: 'POST /v1/tasks/{id}:resolve',
    targetId: t.id,
    normalized: b,
    status: 200,
    effect: async (c) => {
      effect.current = await resolveTask(c, ctx.cred.namespaceId, t.id, b.resolution, b.reason);
      return { data: { task: taskView(effect.current.task) }, resourceId: t.id };
    },
    afterCommit: afterEffect(ctx, effect),
  });
}
