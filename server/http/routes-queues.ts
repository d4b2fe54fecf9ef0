import { OrbitError } from '@orbit/protocol/errors';
import { CreateQueueBody, RevisionBody } from '@orbit/protocol/http-schemas';
import { ID_RE } from '@orbit/protocol/validation';
import { getQueue, insertQueue, listQueues, queueView, setQueuePaused, type QueueRow } from '../db/queues.js';
import { insertAudit } from '../db/tenants.js';
import { isDuplicateKey } from '../db/pool.js';
import { newId } from '../ids.js';
import { canUseQueue, requireQueueAccess, requireScope } from './auth.js';
import { idempotencyKey, readBody, rejectQuery, runCommand } from './command.js';
import type { Reply, RequestCtx } from './context.js';

export const QUEUE_DEFAULTS = {
  max_active_attempts: 1000,
  lease_seconds: 30,
  retry: { max_attempts: 3, initial_backoff_ms: 1000, max_backoff_ms: 60000, multiplier: 2 },
};

export async function createQueueRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'queues:manage');
  rejectQuery(ctx);
  const key = idempotencyKey(ctx);
  const b = await readBody(ctx, CreateQueueBody);
  const retry = { ...QUEUE_DEFAULTS.retry, ...b.retry };
  if (retry.initial_backoff_ms > retry.max_backoff_ms) {
    throw new OrbitError('INVALID_ARGUMENT', 'retry.initial_backoff_ms: must not exceed retry.max_backoff_ms', { field: 'retry.initial_backoff_ms' });
  }
  const n = {
    name: b.name,
    max_active_attempts: b.max_active_attempts ?? QUEUE_DEFAULTS.max_active_attempts,
    lease_seconds: b.lease_seconds ?? QUEUE_DEFAULTS.lease_seconds,
    retry,
  };
  const cred = ctx.cred;
  return runCommand(ctx, key, {
    operation: 'POST /v1/queues',
    targetId: '',
    normalized: n,
    status: 201,
    effect: async (c) => {
      const id = newId();
      try {
        await insertQueue(c, { id, namespaceId: cred.namespaceId, name: n.name, maxActiveAttempts: n.max_active_attempts, leaseSeconds: n.lease_seconds, retry });
      } catch (err) {
        if (isDuplicateKey(err)) throw new OrbitError('STATE_CONFLICT', `a queue named ${n.name} exists or existed in this namespace`, { field: 'name' });
        throw err;
      }
      await insertAudit(c, { namespaceId: cred.namespaceId, actor: cred.id, action: 'queue.create', targetType: 'queue', targetId: id, details: n });
      const row = (await getQueue(c, cred.namespaceId, id))!;
      return { data: { queue: queueView(row) }, resourceId: id };
    },
  });
}

/** Loads a queue of the credential's namespace; 404 for a malformed or unknown id (no SQL for a
 * malformed one), 403 outside queue_ids. */
export async function loadQueue(ctx: RequestCtx, id: string): Promise<QueueRow> {
  const row = ID_RE.test(id) ? await getQueue(ctx.app.pool, ctx.cred.namespaceId, id) : null;
  if (!row) throw new OrbitError('NOT_FOUND', 'queue not found');
  requireQueueAccess(ctx.cred, row.id);
  return row;
}

export async function getQueueRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'queues:manage');
  return { status: 200, data: { queue: queueView(await loadQueue(ctx, ctx.params.id!)) } };
}

export async function listQueuesRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'queues:manage');
  if ([...ctx.url.searchParams.keys()].length > 0) throw new OrbitError('INVALID_ARGUMENT', 'GET /v1/queues takes no query parameters', { field: 'query' });
  const rows = await listQueues(ctx.app.pool, ctx.cred.namespaceId);
  return { status: 200, data: { queues: rows.filter((r) => canUseQueue(ctx.cred, r.id)).map(queueView) } };
}

function pauseOrResume(paused: boolean) {
  return async (ctx: RequestCtx): Promise<Reply> => {
    requireScope(ctx.cred, 'queues:manage');
    rejectQuery(ctx);
    const key = idempotencyKey(ctx);
    const id = ctx.params.id!;
    const b = await readBody(ctx, RevisionBody);
    await loadQueue(ctx, id);
    const cred = ctx.cred;
    const action = paused ? 'pause' : 'resume';
    return runCommand(ctx, key, {
      operation: `POST /v1/queues/{id}:${action}`,
      targetId: id,
      normalized: b,
      status: 200,
      effect: async (c) => {
        const q = (await getQueue(c, cred.namespaceId, id, 'update'))!;
        if (q.retired_at) throw new OrbitError('STATE_CONFLICT', 'queue is retired');
        if (String(q.revision) !== b.expected_revision || !(await setQueuePaused(c, id, paused, b.expected_revision))) {
          throw new OrbitError('STATE_CONFLICT', `expected_revision ${b.expected_revision} is not current (${q.revision})`, { field: 'expected_revision' });
        }
        await insertAudit(c, { namespaceId: cred.namespaceId, actor: cred.id, action: `queue.${action}`, targetType: 'queue', targetId: id });
        const row = (await getQueue(c, cred.namespaceId, id))!;
        return { data: { queue: queueView(row) }, resourceId: id };
      },
      afterCommit: () => {
        if (!paused) ctx.app.signals.wake([id]);
      },
    });
  };
}

export const pauseQueueRoute = pauseOrResume(true);
export const resumeQueueRoute = pauseOrResume(false);
