import type { TSchema } from '@sinclair/typebox';
import { RevisionBody } from '@orbit/protocol/http-schemas';
import type { ErrorCode } from '@orbit/protocol/errors';
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from '@orbit/protocol/limits';

export interface QueryParam {
  name: string;
  description: string;
  enum?: readonly string[];
  integer?: { minimum: number; maximum: number };
}

export interface RouteMeta {
  /** A few words: the operation's title in a rendered reference. */
  summary: string;
  /** What it does and when it refuses; the generator adds the scope, idempotency and answer. */
  description: string;
  /** Any one of these suffices; absent for the unauthenticated routes. */
  scopes?: string[];
  body?: TSchema;
  /** Receipt-bearing: requires Idempotency-Key. */
  idempotent?: boolean;
  query?: QueryParam[];
  /** 200 when absent. */
  status?: number;
  returns: string;
  /** Route-specific codes; the generator adds the common ones and those the path parameters, the
   * body and the Idempotency-Key imply. */
  errors?: ErrorCode[];
  /** Content type of a success that is not a JSON envelope. */
  contentType?: string;
}

export const limit: QueryParam = { name: 'limit', description: `page size (default ${LIST_LIMIT_DEFAULT})`, integer: { minimum: 1, maximum: LIST_LIMIT_MAX } };
export const cursor: QueryParam = { name: 'cursor', description: 'opaque cursor from next_cursor' };

/** A pause or resume: expected_revision, a receipt, the usual refusals and `errors`. */
export const revisionCmd = (summary: string, description: string, scope: string, returns: string, errors: ErrorCode[] = []): RouteMeta => ({
  summary,
  description,
  scopes: [scope],
  body: RevisionBody,
  idempotent: true,
  returns,
  errors: ['STATE_CONFLICT', ...errors],
});
