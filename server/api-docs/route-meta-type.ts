import type { TSchema } from '@sinclair/typebox';
import { RetireBody, RevisionBody } from '@orbit/protocol/http-schemas';
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

/** A receipt-bearing command: the one scope that grants it, its body, an Idempotency-Key. */
export const command = (scope: string, body: TSchema): Pick<RouteMeta, 'scopes' | 'body' | 'idempotent'> => ({ scopes: [scope], body, idempotent: true });

/** The reads that any one of `scopes` grants (public without): each states what it is and answers. */
export const reader =
  (scopes?: string[]) =>
  (summary: string, description: string, returns: string): RouteMeta => ({ summary, description, scopes, returns });

/** Pause, resume and retire of the resource under `base`: each takes expected_revision and answers
 * `{<noun>, deduplicated}`; `errors.each` are refusals of all three, `errors.retire` of the retire. */
export function lifecycleRoutes(
  base: string,
  noun: string,
  scope: string,
  descriptions: { pause: string; resume: string; retire: string },
  errors: { each?: ErrorCode[]; retire?: ErrorCode[] } = {},
): Record<string, RouteMeta> {
  const routes: Record<string, RouteMeta> = {};
  for (const verb of ['pause', 'resume', 'retire'] as const) {
    routes[`POST ${base}/{id}:${verb}`] = {
      summary: `${verb[0]!.toUpperCase()}${verb.slice(1)} a ${noun}`,
      description: descriptions[verb],
      ...command(scope, verb === 'retire' ? RetireBody : RevisionBody),
      returns: `{${noun}, deduplicated}`,
      errors: ['STATE_CONFLICT', ...(errors.each ?? []), ...(verb === 'retire' ? (errors.retire ?? []) : [])],
    };
  }
  return routes;
}
