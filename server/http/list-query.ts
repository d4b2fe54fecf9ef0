// Query parameters of list endpoints. Cursors are opaque: base64url of a one-letter kind and a
// position.
import { OrbitError } from '@orbit/protocol/errors';
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from '@orbit/protocol/limits';
import type { RequestCtx } from './context.js';

/** Refuses a parameter outside `allowed`; `one` reads a parameter given at most once. */
export function queryParams(ctx: RequestCtx, allowed: ReadonlySet<string>): (k: string) => string | undefined {
  const q = ctx.url.searchParams;
  for (const k of q.keys()) {
    if (!allowed.has(k)) throw new OrbitError('INVALID_ARGUMENT', `unknown query parameter ${k}`, { field: k });
  }
  return (k) => {
    const all = q.getAll(k);
    if (all.length > 1) throw new OrbitError('INVALID_ARGUMENT', `${k}: given more than once`, { field: k });
    return all[0];
  };
}

/** `after`: the position encoded in `cursor`; undefined for the first page. `pageOf` cuts rows read
 * one past `limit` to the page, with the cursor of its last row when there are more. */
export function listQuery(ctx: RequestCtx, allowed: ReadonlySet<string>, cursorKind: string, position = '(0|[1-9][0-9]{0,19})') {
  const one = queryParams(ctx, allowed);
  const rawLimit = one('limit');
  const limit = rawLimit === undefined ? LIST_LIMIT_DEFAULT : /^[0-9]{1,3}$/.test(rawLimit) ? Number(rawLimit) : 0;
  if (limit < 1 || limit > LIST_LIMIT_MAX) throw new OrbitError('INVALID_ARGUMENT', `limit: must be an integer 1-${LIST_LIMIT_MAX}`, { field: 'limit' });
  const cursor = one('cursor');
  let after: string | undefined;
  if (cursor !== undefined) {
    const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
    if (!new RegExp(`^${cursorKind}${position}$`).test(decoded)) throw new OrbitError('INVALID_ARGUMENT', 'cursor: malformed', { field: 'cursor' });
    after = decoded.slice(cursorKind.length);
  }
  const pageOf = <R>(rows: R[], positionOf: (last: R) => string) => {
    const page = rows.slice(0, limit);
    return { page, next_cursor: rows.length > limit ? Buffer.from(cursorKind + positionOf(page[page.length - 1]!)).toString('base64url') : null };
  };
  return { one, limit, after, pageOf };
}

export function noQuery(ctx: RequestCtx): void {
  if ([...ctx.url.searchParams.keys()].length > 0) throw new OrbitError('INVALID_ARGUMENT', 'this endpoint takes no query parameters', { field: 'query' });
}
