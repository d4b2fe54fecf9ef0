// Error messages that tell the caller what to do next (issue 13, point 8): a queue name where an
// id is expected names the id, an unknown enum value lists the valid ones, a quota names its limit.
// Kept apart from the routes so the messages live in one place; the refusals the task-creation
// path also gives are in server/dispatch/refusals.ts.
export { queueNotFound } from '../dispatch/refusals.js';
import type { ServerResponse } from 'node:http';
import { OrbitError } from '@orbit/protocol/errors';

/** 400 for a value outside a fixed set, naming every valid value. */
export function notOneOf(field: string, value: string, allowed: readonly string[]): OrbitError {
  return new OrbitError('INVALID_ARGUMENT', `${field}: ${JSON.stringify(value.slice(0, 64))} is not one of ${allowed.join(', ')}`, {
    field,
    allowed: [...allowed],
  });
}

/** 405 for a path that exists under other methods; sets the Allow header (RFC 9110 §15.5.6). */
export function methodNotAllowed(res: ServerResponse, method: string, path: string, allow: string[]): OrbitError {
  res.setHeader('Allow', allow.join(', '));
  return new OrbitError('METHOD_NOT_ALLOWED', `${method.slice(0, 16)} is not allowed on ${path.slice(0, 200)}; use ${allow.join(' or ')}`, { allow });
}
