import { OrbitError } from '@orbit/protocol/errors';
import type { QueueStats, WorkerSession } from '@orbit/protocol/http-views';
import { CreateQueueBody, RetireBody, RevisionBody } from '@orbit/protocol/http-schemas';
import { QUEUE_DEFAULTS } from '@orbit/protocol/limits';
import { getQueue, insertQueue, listQueues, queueView } from '../db/queues.js';
import { auditCommand, insertNamed, pauseAtRevision } from '../admin/definitions.js';
import { newId } from '../ids.js';
import { canUseQueue } from '../admin/access.js';
import { queueStats } from '../db/queue-stats.js';
import { listConnectedSessions } from '../db/worker-sessions.js';
import { retireQueue } from '../events/retire.js';
import { namedQueue, pathResource } from './hints.js';
import { command, commandsOn, scopedRoute, viewReply } from './command.js';
import type { RequestCtx } from './context.js';
import { noQuery, queryParams } from './list-query.js';

export const createQueueRoute = command({
  operation: 'POST /v1/queues',
  scope: 'queues:manage',
  body: CreateQueueBody,
  status: 201,
  load: async (_ctx, b) => {
    const retry = { ...QUEUE_DEFAULTS.retry, ...b.retry };
    if (retry.initial_backoff_ms > retry.max_backoff_ms) {
      throw new OrbitError('INVALID_ARGUMENT', 'retry.initial_backoff_ms: must not exceed retry.max_backoff_ms', { field: 'retry.initial_backoff_ms' });
    }
    return {
      name: b.name,
      max_active_attempts: b.max_active_attempts ?? QUEUE_DEFAULTS.max_active_attempts,
      lease_seconds: b.lease_seconds ?? QUEUE_DEFAULTS.lease_seconds,
      retry,
    };
  },
  effect: async (c, n, { cred }) => {
    const id = newId();
    await insertNamed('queue', n.name, () => insertQueue(c, { id, namespace_id: cred.namespaceId, ...n }));
    await auditCommand(c, cred, 'queue', 'create', id, n);
    return queueView((await getQueue(c, cred.namespaceId, id))!);
  },
  reply: viewReply('queue'),
});

const loadQueue = (ctx: RequestCtx) => pathResource(ctx, 'queue', getQueue, (q) => q.id);

export const getQueueRoute = scopedRoute(['queues:manage'], async (ctx) => ({ queue: queueView(await loadQueue(ctx)) }));

export const listQueuesRoute = scopedRoute(['queues:manage'], async (ctx) => {
  noQuery(ctx);
  const rows = await listQueues(ctx.app.pool, ctx.cred.namespaceId);
  return { queues: rows.filter((r) => canUseQueue(ctx.cred, r.id)).map(queueView) };
});

const onQueue = commandsOn({ path: '/v1/queues', scope: 'queues:manage', load: loadQueue, reply: viewReply('queue') });

function pauseOrResume(paused: boolean) {
  return onQueue(
    paused ? 'pause' : 'resume',
    RevisionBody,
    async (c, b, { cred, params }) => {
      const id = params.id!;
      await pauseAtRevision(c, cred, 'queue', (await getQueue(c, cred.namespaceId, id, 'update'))!, paused, b.expected_revision);
      return queueView((await getQueue(c, cred.namespaceId, id))!);
    },
    (queue, ctx) => {
      if (!paused) ctx.app.signals.wake([queue.id]);
    },
  );
}

export const pauseQueueRoute = pauseOrResume(true);
export const resumeQueueRoute = pauseOrResume(false);
export const retireQueueRoute = onQueue('retire', RetireBody, (c, b, { cred, params }) => retireQueue(c, cred, params.id!, b));

// ---- read-only views the console needs, public like every /v1 endpoint ----

/** Producers that read their tasks may see the queue's load. */
export const queueStatsRoute = scopedRoute(['queues:manage', 'tasks:read'], async (ctx) => {
  queryParams(ctx, new Set());
  const stats: QueueStats = await queueStats(ctx.app.pool, ctx.cred.namespaceId, await loadQueue(ctx));
  return { stats };
});

/** A credential limited to some queues sees only sessions that consume one of them, and only
 * those queue ids. */
export const listWorkersRoute = scopedRoute(['queues:manage'], async (ctx) => {
  const queueId = queryParams(ctx, new Set(['queue_id']))('queue_id');
  if (queueId !== undefined) await namedQueue(ctx, queueId);
  const cred = ctx.cred;
  const workers: WorkerSession[] = [];
  for (const w of await listConnectedSessions(ctx.app.pool, cred.namespaceId, queueId)) {
    const queues = w.queues.filter((id) => canUseQueue(cred, id));
    if (queues.length > 0) workers.push({ ...w, queues });
  }
  return { workers };
});
