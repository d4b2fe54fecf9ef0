// Error messages that tell the caller what to do next, kept in one place.
import type { ServerResponse } from 'node:http';
import { OrbitError } from '@orbit/protocol/errors';
import { getQueue, type QueueRow } from '../db/queues.js';
import { queueNotFound } from '../dispatch/refusals.js';
import { requireQueueAccess } from '../admin/access.js';
import type { RequestCtx } from './context.js';
import type { Pool, Tx } from '../db/pool.js';

/** The queue a body field or query parameter names, if the credential may use it; a name given
 * for an id is answered with the id. In `tx` the row is read locked shared, which serializes with
 * the queue's retirement. */
export async function namedQueue(ctx: RequestCtx, id: string, field?: string, tx?: Tx): Promise<QueueRow> {
  const ns = ctx.cred.namespaceId;
  const q = tx ? await getQueue(tx, ns, id, 'share') : await getQueue(ctx.app.pool, ns, id);
  if (!q) throw await queueNotFound(tx ?? ctx.app.pool, ns, id, field);
  requireQueueAccess(ctx.cred, q.id);
  return q;
}

/** The resource the path's `{id}` names, seen through its queue. */
export async function pathResource<R>(
  ctx: RequestCtx,
  kind: string,
  read: (db: Pool, namespaceId: string, id: string) => Promise<R | null>,
  queueOf: (row: R) => string,
): Promise<R> {
  const row = await read(ctx.app.pool, ctx.cred.namespaceId, ctx.params.id!);
  if (!row) throw new OrbitError('NOT_FOUND', `${kind} not found`);
  requireQueueAccess(ctx.cred, queueOf(row));
  return row;
}

export function notOneOf(field: string, value: string, allowed: readonly string[]): OrbitError {
  return new OrbitError('INVALID_ARGUMENT', `${field}: ${JSON.stringify(value.slice(0, 64))} is not one of ${allowed.join(', ')}`, {
    field,
    allowed: [...allowed],
  });
}

/** Sets the Allow header that RFC 9110 requires with 405. */
export function methodNotAllowed(res: ServerResponse, method: string, path: string, allow: string[]): OrbitError {
  res.setHeader('Allow', allow.join(', '));
  return new OrbitError('METHOD_NOT_ALLOWED', `${method.slice(0, 16)} is not allowed on ${path.slice(0, 200)}; use ${allow.join(' or ')}`, { allow });
}
