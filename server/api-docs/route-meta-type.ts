// The shape of a route's OpenAPI metadata (routes-meta.ts and its per-feature parts).
import type { TSchema } from '@sinclair/typebox';
import type { ErrorCode } from '@orbit/protocol/errors';
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from '@orbit/protocol/limits';

export interface QueryParam {
  name: string;
  description: string;
  enum?: readonly string[];
  integer?: { minimum: number; maximum: number };
}

export interface RouteMeta {
  summary: string;
  /** The scope the credential needs; absent for the unauthenticated health and docs routes. */
  scope?: string;
  /** Other scopes that also grant the route (any one of scope + these suffices). */
  orScopes?: string[];
  body?: TSchema;
  /** Receipt-bearing command: requires Idempotency-Key. */
  idempotent?: boolean;
  query?: QueryParam[];
  status: number;
  /** What `data` holds on success. */
  returns: string;
  /** Route-specific codes; the common ones (auth, 400, 500, 503, …) are added by the generator. */
  errors: ErrorCode[];
}

/** The paging parameters of every list. */
export const limit: QueryParam = { name: 'limit', description: `page size (default ${LIST_LIMIT_DEFAULT})`, integer: { minimum: 1, maximum: LIST_LIMIT_MAX } };
export const cursor: QueryParam = { name: 'cursor', description: 'opaque cursor from next_cursor' };
