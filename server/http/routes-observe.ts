// Read-only views the console needs, public like every /v1 endpoint.
import { OrbitError } from '@orbit/protocol/errors';
import type { QueueStats, WorkerSession } from '@orbit/protocol/http-views';
import { queueStats } from '../db/queue-stats.js';
import { listConnectedSessions } from '../db/worker-sessions.js';
import { canUseQueue, requireScope } from '../admin/access.js';
import { namedQueue } from './hints.js';
import { scopedRoute } from './command.js';
import type { Reply, RequestCtx } from './context.js';
import { loadQueue } from './routes-queues.js';

function onlyParams(ctx: RequestCtx, allowed: string[]): void {
  for (const k of ctx.url.searchParams.keys()) {
    if (!allowed.includes(k)) throw new OrbitError('INVALID_ARGUMENT', `unknown query parameter ${k}`, { field: k });
    if (ctx.url.searchParams.getAll(k).length > 1) throw new OrbitError('INVALID_ARGUMENT', `${k}: given more than once`, { field: k });
  }
}

/** Producers that read their tasks may see the queue's load. */
export async function queueStatsRoute(ctx: RequestCtx): Promise<Reply> {
  if (!ctx.cred.scopes.includes('tasks:read')) requireScope(ctx.cred, 'queues:manage');
  onlyParams(ctx, []);
  const q = await loadQueue(ctx);
  const stats: QueueStats = await queueStats(ctx.app.pool, ctx.cred.namespaceId, q);
  return { status: 200, data: { stats } };
}

/** A credential limited to some queues sees only sessions that consume one of them, and only
 * those queue ids. */
export const listWorkersRoute = scopedRoute(['queues:manage'], async (ctx) => {
  onlyParams(ctx, ['queue_id']);
  const queueId = ctx.url.searchParams.get('queue_id') ?? undefined;
  if (queueId !== undefined) await namedQueue(ctx, queueId);
  const cred = ctx.cred;
  const workers: WorkerSession[] = [];
  for (const w of await listConnectedSessions(ctx.app.pool, cred.namespaceId, queueId)) {
    const queues = w.queues.filter((id) => canUseQueue(cred, id));
    if (queues.length > 0) workers.push({ ...w, queues });
  }
  return { workers };
});
