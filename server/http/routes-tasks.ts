import { OrbitError } from '@orbit/protocol/errors';
import { isTaskState, TASK_STATES } from '@orbit/protocol/states';
import { concurrencyKeyProblem } from '@orbit/protocol/validation';
import { getTask, listTasks, taskView, type TaskRow } from '../db/tasks.js';
import { requireQueueAccess } from '../admin/access.js';
import { namedQueue, notOneOf } from './hints.js';
import { scopedRoute } from './command.js';
import type { RequestCtx } from './context.js';
import { encodeCursor, listQuery } from './list-query.js';

/** The path's task; the router has checked that `{id}` is an id. */
export async function loadTask(ctx: RequestCtx): Promise<TaskRow> {
  const row = await getTask(ctx.app.pool, ctx.cred.namespaceId, ctx.params.id!);
  if (!row) throw new OrbitError('NOT_FOUND', 'task not found');
  requireQueueAccess(ctx.cred, row.queue_id);
  return row;
}

export const getTaskRoute = scopedRoute(['tasks:read'], async (ctx) => ({ task: taskView(await loadTask(ctx)) }));

const LIST_PARAMS = new Set(['queue_id', 'state', 'concurrency_key', 'business_key', 'limit', 'cursor']);

export const listTasksRoute = scopedRoute(['tasks:read'], async (ctx) => {
  const { one, limit, after: beforeSeq } = listQuery(ctx, LIST_PARAMS, 's', '[1-9][0-9]{0,19}');
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
  const page = rows.slice(0, limit);
  const next = rows.length > limit ? encodeCursor('s', String(page[page.length - 1]!.seq)) : null;
  return { tasks: page.map((r) => taskView(r, true)), next_cursor: next };
});
