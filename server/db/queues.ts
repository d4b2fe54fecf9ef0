// SQL operations on queues.
import { checkedAssignment, type CheckedUpdate } from './conditional-commit.js';
import type { RowDataPacket } from 'mysql2/promise';
import { toIso, type Pool, type Conn } from './pool.js';
import { dbNow } from './time.js';
import type { Queue } from '@orbit/protocol/http-views';
import { isId } from '@orbit/protocol/ids';
import { placeholders, byIdRead } from './placeholders.js';

export interface QueueRow extends RowDataPacket {
  id: string;
  namespace_id: string;
  name: string;
  revision: string;
  paused: number;
  max_active_attempts: number;
  active_attempts: number;
  lease_seconds: number;
  retry_max_attempts: number;
  retry_initial_backoff_ms: number;
  retry_max_backoff_ms: number;
  retry_multiplier: number;
  created_at: string;
  updated_at: string;
  retired_at: string | null;
}

export function queueView(r: QueueRow): Queue {
  const v: Queue = {
    id: r.id,
    namespace_id: r.namespace_id,
    name: r.name,
    revision: String(r.revision),
    paused: r.paused === 1,
    max_active_attempts: r.max_active_attempts,
    lease_seconds: r.lease_seconds,
    retry: {
      max_attempts: r.retry_max_attempts,
      initial_backoff_ms: r.retry_initial_backoff_ms,
      max_backoff_ms: r.retry_max_backoff_ms,
      multiplier: r.retry_multiplier,
    },
    active_attempts: r.active_attempts,
    created_at: toIso(r.created_at)!,
    updated_at: toIso(r.updated_at)!,
  };
  if (r.retired_at) v.retired_at = toIso(r.retired_at)!;
  return v;
}

const COLUMNS = `id, namespace_id, name, revision, paused, max_active_attempts, active_attempts, lease_seconds,
  retry_max_attempts, retry_initial_backoff_ms, retry_max_backoff_ms, retry_multiplier, created_at, updated_at, retired_at`;

/** `lock` 'share' serializes a submit with retirement. */
export const getQueue = byIdRead<QueueRow>('queues', COLUMNS);

export async function listQueues(db: Pool | Conn, namespaceId: string): Promise<QueueRow[]> {
  const [rows] = await db.execute<QueueRow[]>(`SELECT ${COLUMNS} FROM queues WHERE namespace_id = ? ORDER BY name`, [namespaceId]);
  return rows;
}

export async function findQueueByName(db: Pool | Conn, namespaceId: string, name: string): Promise<QueueRow | null> {
  const [rows] = await db.execute<QueueRow[]>(`SELECT ${COLUMNS} FROM queues WHERE namespace_id = ? AND name = ?`, [namespaceId, name]);
  return rows[0] ?? null;
}

const INSERTED = ['id', 'namespace_id', 'name', 'max_active_attempts', 'lease_seconds'] as const satisfies readonly (keyof QueueRow)[];
export type NewQueue = Pick<QueueRow, (typeof INSERTED)[number]> & { retry: Queue['retry'] };

export async function insertQueue(db: Pool | Conn, q: NewQueue): Promise<void> {
  const { max_attempts, initial_backoff_ms, max_backoff_ms, multiplier } = q.retry;
  await db.execute(
    `INSERT INTO queues (${INSERTED.join(', ')}, retry_max_attempts, retry_initial_backoff_ms, retry_max_backoff_ms, retry_multiplier, revision, paused,
       active_attempts, created_at, updated_at)
     VALUES (${placeholders(INSERTED.length + 4)}, 1, 0, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
    [...INSERTED.map((n) => q[n]), max_attempts, initial_backoff_ms, max_backoff_ms, multiplier],
  );
}

/** The caller holds the row FOR UPDATE and found nothing that still holds the queue. */
export async function markQueueRetired(c: Conn, id: string, reason: string): Promise<void> {
  await c.execute(
    `UPDATE queues SET paused = 1, retired_at = UTC_TIMESTAMP(3), retire_reason = ?, revision = revision + 1, updated_at = UTC_TIMESTAMP(3)
      WHERE id = ?`,
    [reason, id],
  );
}

/** The queues among `ids` in the namespace (a hello's, an admin's credential's). */
export async function queuesInNamespace(c: Conn, namespaceId: string, ids: string[]): Promise<Pick<QueueRow, 'id' | 'lease_seconds' | 'retired_at'>[]> {
  const [rows] = await c.query<QueueRow[]>(`SELECT id, lease_seconds, retired_at FROM queues WHERE namespace_id = ? AND id IN (${placeholders(ids.length)})`, [
    namespaceId,
    ...ids,
  ]);
  return rows;
}

export type SubmitQueueRow = Pick<QueueRow, 'id' | 'namespace_id' | 'retired_at' | 'retry_max_attempts'> & { now: string };

export interface SubmitQueues {
  rows: SubmitQueueRow[];
  now: string;
  liveCredentials: Set<string>;
}

/** Reads a submit batch's queues without a lock (liveQueuesTouch decides retirement), the clock,
 * and which cached credentials are still live. Null when no id can name anything. */
export function submitQueuesRead(ids: string[], credentialIds: string[]): [string, string[]] | null {
  const valid = [...new Set(ids.filter(isId))];
  const creds = [...new Set(credentialIds.filter(isId))];
  const parts: string[] = [];
  if (valid.length > 0) {
    parts.push(
      `SELECT 'q' AS kind, id, namespace_id, retired_at, retry_max_attempts, UTC_TIMESTAMP(3) AS now FROM queues WHERE id IN (${placeholders(valid.length)})`,
    );
  }
  if (creds.length > 0) {
    parts.push(
      `SELECT 'c' AS kind, id, NULL AS namespace_id, NULL AS retired_at, NULL AS retry_max_attempts, UTC_TIMESTAMP(3) AS now FROM credentials WHERE id IN (${placeholders(creds.length)}) AND revoked_at IS NULL`,
    );
  }
  return parts.length > 0 ? [parts.join(' UNION ALL '), [...valid, ...creds]] : null;
}

export async function submitQueuesOf(c: Conn, result: RowDataPacket[] | undefined): Promise<SubmitQueues> {
  const all = (result ?? []) as (SubmitQueueRow & { kind: string })[];
  if (all.length === 0) return { rows: [], now: await dbNow(c), liveCredentials: new Set() };
  const liveCredentials = new Set(all.filter((r) => r.kind === 'c').map((r) => r.id));
  // The UNION widens retry_max_attempts to BIGINT, which mysql2 returns as a string.
  const rows = all.filter((r) => r.kind === 'q').map((r) => Object.assign(r, { retry_max_attempts: Number(r.retry_max_attempts) }));
  return { rows, now: all[0]!.now, liveCredentials };
}

/** Locks the queues to the commit and is refused when one is retired: the retirement check of
 * every task creation. Retirement locks the same row, so whichever commits first wins. */
export function liveQueuesTouch(ids: string[]): CheckedUpdate {
  const sorted = [...new Set(ids)].sort();
  return {
    sql: `UPDATE queues SET ${checkedAssignment('queues', 'revision', 'retired_at IS NULL', 'revision')} WHERE id IN (${placeholders(sorted.length)})`,
    values: sorted,
    column: 'revision',
  };
}
