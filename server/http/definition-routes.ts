// What the routes of schedules and workflows share.
import { OrbitError } from '@orbit/protocol/errors';
import type { CommandReply } from './command.js';
import type { RequestCtx } from './context.js';
import { listQuery } from './list-query.js';

/** The definition commands return their frozen reply already. */
export const asIs = (r: CommandReply): CommandReply => r;

/** `read` is asked for one row more than the page, which tells whether there is a next page. */
export async function pageByName<R extends { name: string }>(
  ctx: RequestCtx,
  read: (after: string | undefined, limit: number) => Promise<R[]>,
): Promise<{ page: R[]; next_cursor: string | null }> {
  const { limit, after, pageOf } = listQuery(ctx, new Set(['limit', 'cursor']), 'n', '[a-z0-9._-]{1,64}');
  return pageOf(await read(after, limit), (r) => r.name);
}

/** A version number in a path; the OpenAPI document states the same pattern. */
export const VERSION_NUMBER_RE = /^[1-9][0-9]{0,8}$/;

/** The version the path's `{n}` names; a malformed number can never name one, so 404 like a missing one. */
export async function pathVersion<V>(ctx: RequestCtx, read: (n: number) => Promise<V | null>): Promise<V> {
  const v = VERSION_NUMBER_RE.test(ctx.params.n!) ? await read(Number(ctx.params.n)) : null;
  if (!v) throw new OrbitError('NOT_FOUND', 'version not found');
  return v;
}
