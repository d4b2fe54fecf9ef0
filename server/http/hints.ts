// Error messages that tell the caller what to do next, kept in one place.
export { queueNotFound } from '../dispatch/refusals.js';
import type { ServerResponse } from 'node:http';
import { OrbitError } from '@orbit/protocol/errors';

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
