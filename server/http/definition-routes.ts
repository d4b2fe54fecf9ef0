// What the routes of the two versioned definitions share (routes-schedules.ts, routes-workflows.ts):
// their commands' replies, the "load the definition first" step of a command on one, the list
// paged by name, and the version number in a path.
import type { CommandReply } from './command.js';
import type { RequestCtx } from './context.js';
import { encodeCursor, listQuery } from './list-query.js';

/** The definition commands return their frozen reply already. */
export const asIs = (r: CommandReply): CommandReply => r;

/** A command's `load` step for a command on an existing definition: load it first (404 absent,
 * 403 outside queue_ids), then take the body as it is. */
export function afterLoading(load: (ctx: RequestCtx) => Promise<unknown>) {
  return async <B>(ctx: RequestCtx, b: B): Promise<B> => {
    await load(ctx);
    return b;
  };
}

/** One page of a list ordered by unique name (`limit`, `cursor` = after that name): `read` is asked
 * for one row more than the page, which tells whether there is a next page. */
export async function pageByName<R extends { name: string }>(
  ctx: RequestCtx,
  read: (after: string | undefined, limit: number) => Promise<R[]>,
): Promise<{ page: R[]; next_cursor: string | null }> {
  const { limit, after } = listQuery(ctx, new Set(['limit', 'cursor']), 'n', '[a-z0-9._-]{1,64}');
  const rows = await read(after, limit);
  const page = rows.slice(0, limit);
  return { page, next_cursor: rows.length > limit ? encodeCursor('n', page[page.length - 1]!.name) : null };
}

/** The `{n}` of a version path; null when it is malformed (it can never name a version: 404 like a
 * malformed id). */
export function versionNumber(ctx: RequestCtx): number | null {
  const raw = ctx.params.n!;
  return /^[1-9][0-9]{0,8}$/.test(raw) ? Number(raw) : null;
}
