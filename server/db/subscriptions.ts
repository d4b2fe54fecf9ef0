// SQL operations on the result stream's consumer side: subscriptions, deliveries and the
// committed watermark.
import type { RowDataPacket } from 'mysql2/promise';
import { toIso, type Pool, type Conn, type Tx } from './pool.js';
import type { DeliveryRecord, Subscription } from '@orbit/protocol/http-views';
import type { DeliveryState } from '@orbit/protocol/states';
import { Conditions, placeholderRows, placeholders, byIdRead } from './placeholders.js';

export interface SubscriptionRow extends RowDataPacket {
  id: string;
  namespace_id: string;
  name: string;
  queue_id: string;
  event_types: string;
  owner_credential_id: string;
  enabled: number;
  paused: number;
  cursor_sequence: string;
  revision: string;
  created_at: string;
  updated_at: string;
  retired_at: string | null;
  retired_sequence: string | null;
}

export function subscriptionView(r: SubscriptionRow, pendingCount: number): Subscription {
  const v: Subscription = {
    id: r.id,
    name: r.name,
    queue_id: r.queue_id,
    event_types: eventTypes(r),
    enabled: r.enabled === 1,
    paused: r.paused === 1,
    cursor: String(r.cursor_sequence),
    pending_count: pendingCount,
    revision: String(r.revision),
    created_at: toIso(r.created_at)!,
  };
  if (r.retired_at) {
    v.retired_at = toIso(r.retired_at)!;
    v.retired_sequence = String(r.retired_sequence);
  }
  return v;
}

export function eventTypes(r: SubscriptionRow): string[] {
  return JSON.parse(r.event_types) as string[];
}

const COLUMNS = `id, namespace_id, name, queue_id, event_types, owner_credential_id, enabled, paused, cursor_sequence, revision,
  created_at, updated_at, retired_at, retired_sequence`;

export const getSubscription = byIdRead<SubscriptionRow>('subscriptions', COLUMNS);

export async function listSubscriptions(db: Pool | Conn, namespaceId: string, ownerId: string): Promise<SubscriptionRow[]> {
  const sql = `SELECT ${COLUMNS} FROM subscriptions WHERE namespace_id = ? AND owner_credential_id = ? ORDER BY name`;
  const [rows] = await db.execute<SubscriptionRow[]>(sql, [namespaceId, ownerId]);
  return rows;
}

export async function countQueueSubscriptions(c: Conn, queueId: string): Promise<number> {
  const [rows] = await c.execute<RowDataPacket[]>('SELECT COUNT(*) AS n FROM subscriptions WHERE queue_id = ? AND retired_at IS NULL', [queueId]);
  return Number(rows[0]!.n);
}

export type NewSubscription = Pick<SubscriptionRow, 'id' | 'namespace_id' | 'name' | 'queue_id' | 'owner_credential_id' | 'cursor_sequence'> & {
  event_types: string[];
};

export async function insertSubscription(c: Conn, s: NewSubscription): Promise<void> {
  await c.execute(
    `INSERT INTO subscriptions (id, namespace_id, name, queue_id, event_types, owner_credential_id, enabled, paused, cursor_sequence,
       revision, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, 1, 0, ?, 1, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
    [s.id, s.namespace_id, s.name, s.queue_id, JSON.stringify(s.event_types), s.owner_credential_id, s.cursor_sequence],
  );
}

export async function markSubscriptionRetired(c: Conn, id: string, watermark: string): Promise<void> {
  await c.execute(
    `UPDATE subscriptions SET enabled = 0, retired_at = UTC_TIMESTAMP(3), retired_sequence = ?, cursor_sequence = ?,
            revision = revision + 1, updated_at = UTC_TIMESTAMP(3)
      WHERE id = ?`,
    [watermark, watermark, id],
  );
}

/** Progress, not a configuration change: no revision bump. */
export async function setCursor(c: Conn, id: string, sequence: string): Promise<void> {
  await c.execute('UPDATE subscriptions SET cursor_sequence = ? WHERE id = ?', [sequence, id]);
}

/** No lock: an outcome holds the head row until it commits, so the committed head is the
 * watermark. */
export async function committedWatermark(db: Pool | Conn, namespaceId: string): Promise<string> {
  const [rows] = await db.execute<RowDataPacket[]>('SELECT last_sequence FROM stream_heads WHERE namespace_id = ?', [namespaceId]);
  return rows[0] ? String(rows[0].last_sequence) : '0';
}

export async function lockWatermark(c: Tx, namespaceId: string): Promise<string> {
  await c.execute(
    `INSERT INTO stream_heads (namespace_id, last_sequence, updated_at) VALUES (?, 0, UTC_TIMESTAMP(3))
     ON DUPLICATE KEY UPDATE namespace_id = namespace_id`,
    [namespaceId],
  );
  const [rows] = await c.execute<RowDataPacket[]>('SELECT last_sequence FROM stream_heads WHERE namespace_id = ? FOR UPDATE', [namespaceId]);
  return String(rows[0]!.last_sequence);
}

export async function oldestRetainedSequence(db: Pool | Conn, namespaceId: string): Promise<string | null> {
  const [rows] = await db.execute<RowDataPacket[]>('SELECT MIN(sequence) AS s FROM result_events WHERE namespace_id = ?', [namespaceId]);
  return rows[0]!.s === null ? null : String(rows[0]!.s);
}

/** The events a subscription takes: its queue's, of its types. */
export type StreamFilter = { namespaceId: string; queueId: string; types: string[] };

function streamRange(s: StreamFilter, cursor: string, watermark: string): Conditions {
  const where = new Conditions('namespace_id = ? AND queue_id = ? AND sequence > ? AND sequence <= ?', s.namespaceId, s.queueId, cursor, watermark);
  where.and(`type IN (${placeholders(s.types.length)})`, ...s.types);
  return where;
}

export async function countUnmaterialized(db: Pool | Conn, s: StreamFilter, cursor: string, watermark: string): Promise<number> {
  if (BigInt(cursor) >= BigInt(watermark)) return 0;
  const where = streamRange(s, cursor, watermark);
  const [rows] = await db.query<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM result_events WHERE ${where}`, where.args);
  return Number(rows[0]!.n);
}

export async function matchingSequences(c: Conn, s: StreamFilter, cursor: string, watermark: string, limit: number): Promise<string[]> {
  const where = streamRange(s, cursor, watermark);
  const [rows] = await c.query<RowDataPacket[]>(`SELECT sequence FROM result_events WHERE ${where} ORDER BY sequence LIMIT ${Number(limit)}`, where.args);
  return rows.map((r) => String(r.sequence));
}

export interface EventRow extends RowDataPacket {
  sequence: string;
  type: string;
  task_id: string;
  queue_id: string;
  occurred_at: string;
  result: string | null;
}

export async function eventsBySequence(db: Pool | Conn, namespaceId: string, sequences: string[]): Promise<Map<string, EventRow>> {
  if (sequences.length === 0) return new Map();
  const [rows] = await db.query<EventRow[]>(
    `SELECT sequence, type, task_id, queue_id, occurred_at, result FROM result_events WHERE namespace_id = ? AND sequence IN (${placeholders(sequences.length)})`,
    [namespaceId, ...sequences],
  );
  return new Map(rows.map((r) => [String(r.sequence), r]));
}

export interface DeliveryRow extends RowDataPacket {
  id: string;
  sequence: string;
  state: DeliveryState;
  attempts: number;
  lease_expires_at: string | null;
  acked_at: string | null;
  created_at: string;
}

export async function insertDeliveries(c: Conn, subscriptionId: string, namespaceId: string, rows: { id: string; sequence: string }[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    await c.query(
      `INSERT INTO deliveries (id, subscription_id, namespace_id, sequence, state, attempts, created_at)
       VALUES ${placeholderRows(chunk.length, "(?, ?, ?, ?, 'PENDING', 0, UTC_TIMESTAMP(3))")}`,
      chunk.flatMap((r) => [r.id, subscriptionId, namespaceId, r.sequence]),
    );
  }
}

export async function expireLeases(c: Conn, subscriptionId: string): Promise<number> {
  const [res] = await c.execute(
    `UPDATE deliveries SET state = 'EXPIRED' WHERE subscription_id = ? AND state = 'LEASED' AND lease_expires_at <= UTC_TIMESTAMP(3)`,
    [subscriptionId],
  );
  return (res as { affectedRows: number }).affectedRows;
}

/** A locking read sees the latest state, so a concurrent ack is never overwritten. */
export async function lockLeasable(c: Tx, subscriptionId: string, state: 'PENDING' | 'EXPIRED', limit: number): Promise<{ id: string; sequence: string }[]> {
  const [rows] = await c.query<RowDataPacket[]>(
    `SELECT id, sequence FROM deliveries WHERE subscription_id = ? AND state = ? ORDER BY sequence LIMIT ${Number(limit)} FOR UPDATE`,
    [subscriptionId, state],
  );
  return rows.map((r) => ({ id: r.id as string, sequence: String(r.sequence) }));
}

export async function leaseDeliveryRows(c: Conn, ids: string[], leaseSeconds: number): Promise<void> {
  if (ids.length === 0) return;
  await c.query(
    `UPDATE deliveries SET state = 'LEASED', attempts = attempts + 1, lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND
      WHERE id IN (${placeholders(ids.length)})`,
    [leaseSeconds, ...ids],
  );
}

const DELIVERY_COLUMNS = `id, sequence,
  CASE WHEN state = 'LEASED' AND lease_expires_at <= UTC_TIMESTAMP(3) THEN 'EXPIRED' ELSE state END AS state,
  attempts, lease_expires_at, acked_at, created_at`;

export async function deliveriesByIds(c: Conn, ids: string[]): Promise<DeliveryRow[]> {
  if (ids.length === 0) return [];
  const [rows] = await c.query<DeliveryRow[]>(`SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE id IN (${placeholders(ids.length)}) ORDER BY sequence`, ids);
  return rows;
}

/** Only LEASED or EXPIRED ones, so nothing is discarded unseen. */
export async function ackDeliveryRows(db: Pool | Conn, subscriptionId: string, ids: string[]): Promise<number> {
  const [res] = await db.query(
    `UPDATE deliveries SET state = 'ACKED', acked_at = UTC_TIMESTAMP(3)
      WHERE subscription_id = ? AND id IN (${placeholders(ids.length)}) AND state IN ('LEASED','EXPIRED')`,
    [subscriptionId, ...ids],
  );
  return (res as { affectedRows: number }).affectedRows;
}

export async function countUnacked(db: Pool | Conn, subscriptionId: string): Promise<number> {
  const [rows] = await db.execute<RowDataPacket[]>(
    `SELECT COUNT(*) AS n FROM deliveries WHERE subscription_id = ? AND state IN ('PENDING','LEASED','EXPIRED')`,
    [subscriptionId],
  );
  return Number(rows[0]!.n);
}

/** A LEASED delivery past its lease reads as EXPIRED. */
export async function listDeliveryRows(
  db: Pool | Conn,
  subscriptionId: string,
  q: { state?: DeliveryState; afterSequence?: string; limit: number },
): Promise<DeliveryRow[]> {
  const where = new Conditions('subscription_id = ?', subscriptionId);
  if (q.afterSequence !== undefined) where.and('sequence > ?', q.afterSequence);
  if (q.state === 'EXPIRED') where.and(`(state = 'EXPIRED' OR (state = 'LEASED' AND lease_expires_at <= UTC_TIMESTAMP(3)))`);
  else if (q.state === 'LEASED') where.and(`state = 'LEASED' AND lease_expires_at > UTC_TIMESTAMP(3)`);
  else if (q.state !== undefined) where.and('state = ?', q.state);
  const [rows] = await db.query<DeliveryRow[]>(
    `SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE ${where} ORDER BY sequence LIMIT ${Number(q.limit) + 1}`,
    where.args,
  );
  return rows;
}

export function deliveryView(r: DeliveryRow, event: EventRow | undefined): DeliveryRecord {
  return {
    id: r.id,
    sequence: String(r.sequence),
    state: r.state,
    attempts: r.attempts,
    lease_expires_at: toIso(r.lease_expires_at),
    acked_at: toIso(r.acked_at),
    created_at: toIso(r.created_at)!,
    event: event
      ? {
          sequence: String(event.sequence),
          type: event.type,
          task_id: event.task_id,
          queue_id: event.queue_id,
          occurred_at: toIso(event.occurred_at)!,
          result: event.result === null ? null : JSON.parse(event.result),
        }
      : null,
  };
}
