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
  /** Absent for the unauthenticated routes. */
  scope?: string;
  /** Any one of scope and these suffices. */
  orScopes?: string[];
  body?: TSchema;
  /** Receipt-bearing: requires Idempotency-Key. */
  idempotent?: boolean;
  query?: QueryParam[];
  status: number;
  returns: string;
  /** Route-specific codes; the generator adds the common ones. */
  errors: ErrorCode[];
}

export const limit: QueryParam = { name: 'limit', description: `page size (default ${LIST_LIMIT_DEFAULT})`, integer: { minimum: 1, maximum: LIST_LIMIT_MAX } };
export const cursor: QueryParam = { name: 'cursor', description: 'opaque cursor from next_cursor' };
