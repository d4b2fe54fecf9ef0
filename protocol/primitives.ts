// The building blocks of every schema of the wire contract (frames.ts, http-schemas.ts) and of the
// checks that share their rules (the router, the server's command checks, the SDK): one definition
// each, so a name, an id or a uint64 is the same thing in a frame, a body and a query parameter.
import { Type } from '@sinclair/typebox';
import { ID_PATTERN } from './ids.js';
import { HANDLER_MAX, ID_FIELD_MAX, IDEMPOTENCY_KEY_MAX, MAX_JSON_DEPTH, RESOURCE_NAME_MAX, VERSION_MAX } from './limits.js';

/** Free text stored as a text column (reasons, a result's error code and message, hello's agent):
 * any string a UTF-8 column can hold as sent — no lone surrogate. JSON may spell one (`"\ud800"`),
 * but UTF-8 cannot: the column would store U+FFFD and the value would come back changed (payloads
 * and outputs keep theirs, they are stored as JSON). A pattern, not code, so the gateway's, the
 * SDK's and the API documents' checks are the same; without the `u` flag it reads UTF-16 units. */
export const WELL_FORMED_PATTERN = '^(?:[^\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])*$';
export const Text = (opts: { minLength?: number; maxLength: number }) => Type.String({ ...opts, pattern: WELL_FORMED_PATTERN });
/** The message of a schema error: the well-formedness pattern says what it means instead of
 * TypeBox's "Expected string to match '…'". */
export function schemaErrorMessage(e: { schema: unknown; message: string }): string {
  return (e.schema as { pattern?: unknown }).pattern === WELL_FORMED_PATTERN ? 'must be valid UTF-8 text (a lone surrogate cannot be stored)' : e.message;
}

/** A handler, version or worker name: 1–`max` of [A-Za-z0-9._:-]. */
export const Name = (max: number) => Type.String({ pattern: `^[A-Za-z0-9._:-]{1,${max}}$` });

/** What a task runs and with what: the fields of `POST /v1/tasks` that task.assign hands to the
 * worker as they were submitted. One definition, so a worker accepts every task a producer could
 * submit. */
export const TaskCallFields = {
  handler: Name(HANDLER_MAX),
  handler_version: Name(VERSION_MAX),
  payload_version: Name(VERSION_MAX),
  payload: Type.Unknown(),
  business_key: Type.Optional(Type.String()),
  concurrency_key: Type.Optional(Type.String()),
};

/** Queue, subscription and schedule names: 1–64 of [a-z0-9._-], unique in a namespace forever. */
export const RESOURCE_NAME_PATTERN = `^[a-z0-9._-]{1,${RESOURCE_NAME_MAX}}$`;
export const RESOURCE_NAME_RE = new RegExp(RESOURCE_NAME_PATTERN);
export const ResourceName = Type.String({ pattern: RESOURCE_NAME_PATTERN });

/** An Orbit id (32 lowercase hex, protocol/ids.ts). */
export const Id = Type.String({ pattern: ID_PATTERN });

/** A field that names a resource by id but is accepted as any short string: the handler answers a
 * malformed one NOT_FOUND (or names the resource a queue *name* points to) instead of a bare 400. */
export const IdField = Type.String({ minLength: 1, maxLength: ID_FIELD_MAX });

/** uint64 as a decimal string without leading zeros (revisions, sequences, fencing tokens). The
 * pattern admits 20-digit values above 2^64-1; isUint64String (validation.ts) checks the range. */
export const UINT64_PATTERN = '^(0|[1-9][0-9]{0,19})$';
export const UINT64_RE = new RegExp(UINT64_PATTERN);
export const Uint64 = Type.String({ pattern: UINT64_PATTERN });

/** An RFC 3339 UTC time written by the server (frames). */
export const Timestamp = Type.String();

/** Idempotency-Key (header) and a batch item's idempotency_key: 1–255 visible ASCII characters. */
export const IDEMPOTENCY_KEY_PATTERN = `^[\\x21-\\x7e]{1,${IDEMPOTENCY_KEY_MAX}}$`;
export const IDEMPOTENCY_KEY_RE = new RegExp(IDEMPOTENCY_KEY_PATTERN);
export const IdempotencyKey = Type.String({ pattern: IDEMPOTENCY_KEY_PATTERN });

/** Nesting depth of a parsed JSON value (an object or array is level 1, a scalar 0), computed
 * without recursion (the value may be deeper than the stack); stops counting past `cap`. */
export function jsonDepth(root: unknown, cap: number = MAX_JSON_DEPTH): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > max) max = d;
    if (max > cap) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) {
      if (child !== null && typeof child === 'object') stack.push([child, d + 1]);
    }
  }
  return max;
}

/** True when a parsed HTTP body or frame is nested deeper than MAX_JSON_DEPTH levels: such a value
 * overflows the stack of JSON.stringify and of every recursive walk, so it is refused on arrival. */
export function tooDeep(root: unknown): boolean {
  return jsonDepth(root, MAX_JSON_DEPTH) > MAX_JSON_DEPTH;
}
