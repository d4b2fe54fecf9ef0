// Error messages that tell the caller what to do next (issue 13, point 8): a queue name where an
// id is expected names the id, an unknown enum value lists the valid ones, a quota names its limit.
// Kept apart from the routes so the messages live in one place.
import type { ServerResponse } from 'node:http';
import type { RowDataPacket } from 'mysql2/promise';
import { OrbitError } from '@orbit/protocol/errors';
import { ID_RE } from '@orbit/protocol/validation';
import type { Conn, Pool } from '../db/pool.js';
import { findQueueByName } from '../db/queues.js';

/** 404 for a queue_id that names no queue of the namespace. When the value is not an id but the
 * name of a queue of this namespace, the message gives that queue's id (same namespace only, so
 * nothing outside the credential's reach is revealed). */
export async function queueNotFound(db: Pool | Conn, namespaceId: string, value: string, field = 'queue_id'): Promise<OrbitError> {
  if (ID_RE.test(value)) return new OrbitError('NOT_FOUND', 'queue not found', { field });
  const byName = value.length <= 64 ? await findQueueByName(db, namespaceId, value) : null;
  if (byName) {
    return new OrbitError('NOT_FOUND', `${field} expects a queue id, not a name: the queue named ${JSON.stringify(value)} has id ${byName.id}`, { field, queue_id: byName.id });
  }
  return new OrbitError('NOT_FOUND', `queue not found: ${field} is a 32-hex queue id (GET /v1/queues lists them), not a name`, { field });
}

/** 400 for a value outside a fixed set, naming every valid value. */
export function notOneOf(field: string, value: string, allowed: readonly string[]): OrbitError {
  return new OrbitError('INVALID_ARGUMENT', `${field}: ${JSON.stringify(value.slice(0, 64))} is not one of ${allowed.join(', ')}`, { field, allowed: [...allowed] });
}

/** 429 for the application's unfinished-task quota, stating the limit and how to raise it. */
export async function unfinishedTasksQuota(c: Conn, applicationId: string): Promise<OrbitError> {
  const [rows] = await c.execute<RowDataPacket[]>('SELECT max_unfinished_tasks FROM applications WHERE id = ?', [applicationId]);
  const limit = rows[0] ? Number(rows[0].max_unfinished_tasks) : undefined;
  return new OrbitError(
    'QUOTA_EXCEEDED',
    `application quota of unfinished tasks reached (limit ${limit ?? 'unknown'}): retry once tasks finish, or raise it with \`orbit-admin quota set --application-id ${applicationId} --max-unfinished-tasks N\``,
    { quota: 'max_unfinished_tasks', limit },
  );
}

/** 405 for a path that exists under other methods; sets the Allow header (RFC 9110 §15.5.6). */
export function methodNotAllowed(res: ServerResponse, method: string, path: string, allow: string[]): OrbitError {
  res.setHeader('Allow', allow.join(', '));
  return new OrbitError('METHOD_NOT_ALLOWED', `${method.slice(0, 16)} is not allowed on ${path.slice(0, 200)}; use ${allow.join(' or ')}`, { allow });
}
