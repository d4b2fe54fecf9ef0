// POST /v1/subscriptions/{id}:retire and POST /v1/queues/{id}:retire (http-api.md "Retirement"):
// receipt-bearing commands; a stored receipt replays even after the resource was retired.
import { OrbitError } from '@orbit/protocol/errors';
import { RetireBody } from '@orbit/protocol/http-schemas';
import { ID_RE } from '@orbit/protocol/validation';
import { getQueue } from '../db/queues.js';
import { retireQueue, retireSubscription } from '../events/retire.js';
import { requireQueueAccess, requireScope } from './auth.js';
import { idempotencyKey, readBody, rejectQuery, runCommand } from './command.js';
import type { Reply, RequestCtx } from './context.js';
import { loadSubscription } from './routes-subscriptions.js';

export async function retireSubscriptionRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'events:manage');
  rejectQuery(ctx);
  const key = idempotencyKey(ctx);
  const id = ctx.params.id!;
  const b = await readBody(ctx, RetireBody);
  await loadSubscription(ctx, id);
  const cred = ctx.cred;
  return runCommand(ctx, key, {
    operation: 'POST /v1/subscriptions/{id}:retire',
    targetId: id,
    normalized: b,
    status: 200,
    effect: async (c) => ({ data: { subscription: await retireSubscription(c, cred, id, b) }, resourceId: id }),
  });
}

export async function retireQueueRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'queues:manage');
  rejectQuery(ctx);
  const key = idempotencyKey(ctx);
  const id = ctx.params.id!;
  const b = await readBody(ctx, RetireBody);
  const q = ID_RE.test(id) ? await getQueue(ctx.app.pool, ctx.cred.namespaceId, id) : null;
  if (!q) throw new OrbitError('NOT_FOUND', 'queue not found');
  requireQueueAccess(ctx.cred, q.id);
  const cred = ctx.cred;
  return runCommand(ctx, key, {
    operation: 'POST /v1/queues/{id}:retire',
    targetId: id,
    normalized: b,
    status: 200,
    effect: async (c) => ({ data: { queue: await retireQueue(c, cred, id, b) }, resourceId: id }),
  });
}
