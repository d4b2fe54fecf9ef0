import { OrbitError } from '@orbit/protocol/errors';
import { RESOURCE_NAME_RE } from '@orbit/protocol/primitives';
import { ID_RE } from '@orbit/protocol/validation';
import type { Conn, Pool } from '../db/pool.js';
import { findQueueByName } from '../db/queues.js';
import { maxUnfinishedTasks } from '../db/applications.js';

/** When the value names a queue of this namespace, the message gives its id. */
export async function queueNotFound(db: Pool | Conn, namespaceId: string, value: string, field = 'queue_id'): Promise<OrbitError> {
  if (ID_RE.test(value)) return new OrbitError('NOT_FOUND', 'queue not found', { field });
  // A non-ASCII value compared with the ascii_bin column is a collation error.
  const byName = RESOURCE_NAME_RE.test(value) ? await findQueueByName(db, namespaceId, value) : null;
  if (byName) {
    return new OrbitError('NOT_FOUND', `${field} expects a queue id, not a name: the queue named ${JSON.stringify(value)} has id ${byName.id}`, {
      field,
      queue_id: byName.id,
    });
  }
  return new OrbitError('NOT_FOUND', `queue not found: ${field} is a 32-hex queue id (GET /v1/queues lists them), not a name`, { field });
}

export async function unfinishedTasksQuota(c: Conn, applicationId: string): Promise<OrbitError> {
  const limit = await maxUnfinishedTasks(c, applicationId);
  return new OrbitError(
    'QUOTA_EXCEEDED',
    `application quota of unfinished tasks reached (limit ${limit ?? 'unknown'}): retry once tasks finish, or raise it with \`orbit-admin quota set --application-id ${applicationId} --max-unfinished-tasks N\``,
    { quota: 'max_unfinished_tasks', limit },
  );
}
