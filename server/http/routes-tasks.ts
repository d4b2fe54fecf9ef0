import { OrbitError } from '@orbit/protocol/errors';
import { CancelTaskBody, ResolveTaskBody } from '@orbit/protocol/http-schemas';
import { isTaskState, TASK_STATES } from '@orbit/protocol/states';
import { concurrencyKeyProblem } from '@orbit/protocol/validation';
import { getTask, listTasks, taskView } from '../db/tasks.js';
import { attemptView, getAttempt, listTaskAttempts } from '../db/attempts.js';
import { cancelTask, resolveTask, type CommandEffect } from '../dispatch/task-commands.js';
import { namedQueue, notOneOf, pathResource } from './hints.js';
import { commandsOn, scopedRoute } from './command.js';
import type { RequestCtx } from './context.js';
import { listQuery } from './list-query.js';

const loadTask = (ctx: RequestCtx) => pathResource(ctx, 'task', getTask, (t) => t.queue_id);

export const getTaskRoute = scopedRoute(['tasks:read'], async (ctx) => ({ task: taskView(await loadTask(ctx)) }));

const LIST_PARAMS = new Set(['queue_id', 'state', 'concurrency_key', 'business_key', 'limit', 'cursor']);

export const listTasksRoute = scopedRoute(['tasks:read'], async (ctx) => {
  const { one, limit, after: beforeSeq, pageOf } = listQuery(ctx, LIST_PARAMS, 's', '[1-9][0-9]{0,19}');
  const state = one('state');
  if (state !== undefined && !isTaskState(state)) throw notOneOf('state', state, TASK_STATES);
  const queueId = one('queue_id');
  if (queueId !== undefined) await namedQueue(ctx, queueId);
  const key = one('concurrency_key');
  if (key !== undefined && concurrencyKeyProblem(key)) throw new OrbitError('INVALID_ARGUMENT', 'concurrency_key: invalid', { field: 'concurrency_key' });
  const rows = await listTasks(ctx.app.pool, {
    namespaceId: ctx.cred.namespaceId,
    queueIds: ctx.cred.queueIds,
    queueId,
    state,
    concurrencyKey: key === undefined || key === '' ? undefined : Buffer.from(key, 'utf8'),
    businessKey: one('business_key'),
    beforeSeq,
    limit,
  });
  const { page, next_cursor } = pageOf(rows, (r) => String(r.seq));
  return { tasks: page.map((r) => taskView(r, true)), next_cursor };
});

export const listAttemptsRoute = scopedRoute(['tasks:read'], async (ctx) => {
  const t = await loadTask(ctx);
  const rows = await listTaskAttempts(ctx.app.pool, ctx.cred.namespaceId, t.id);
  return { attempts: rows.map(attemptView) };
});

export const getAttemptRoute = scopedRoute(['tasks:read'], async (ctx) => {
  return { attempt: attemptView(await pathResource(ctx, 'attempt', getAttempt, (a) => a.queue_id)) };
});

function afterEffect(e: CommandEffect, ctx: RequestCtx): void {
  ctx.app.signals.revoked(e.revoked);
  ctx.app.signals.wake(e.freedQueues);
}

const onTask = commandsOn({
  path: '/v1/tasks',
  scope: 'tasks:submit',
  load: loadTask,
  reply: (e: CommandEffect) => ({ data: { task: taskView(e.task) }, resourceId: e.task.id }),
});
export const cancelTaskRoute = onTask(
  'cancel',
  CancelTaskBody,
  (c, b, { app, cred, params }) => cancelTask(c, app.advanceSteps, cred.namespaceId, params.id!, b.reason),
  afterEffect,
);
export const resolveTaskRoute = onTask(
  'resolve',
  ResolveTaskBody,
  (c, b, { app, cred, params }) => resolveTask(c, app.advanceSteps, cred.namespaceId, params.id!, b.resolution, b.reason),
  afterEffect,
);
