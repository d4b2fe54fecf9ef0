// Consuming the result stream. The lease transaction locks the subscription row and reads the
// watermark without a lock; retirement locks the stream head, then the subscription. Neither waits
// for the other while holding what the other needs, so they never deadlock.
import { OrbitError } from '@orbit/protocol/errors';
import { withTransaction, type Conn, type Pool } from '../db/pool.js';
import {
  committedWatermark,
  countUnacked,
  countUnmaterialized,
  deliveriesByIds,
  deliveryView,
  eventTypes,
  eventsBySequence,
  expireLeases,
  getSubscription,
  insertDeliveries,
  leaseDeliveryRows,
  lockLeasable,
  matchingSequences,
  oldestRetainedSequence,
  setCursor,
  type SubscriptionRow,
} from '../db/subscriptions.js';
import { newId } from '../ids.js';

/** Events materialized per lease call; the rest stay behind the cursor for the next call. */
export const MATERIALIZE_BATCH = 1000;

export function filterOf(s: SubscriptionRow) {
  return { namespaceId: s.namespace_id, queueId: s.queue_id, types: eventTypes(s) };
}

/** A retired subscription counts nothing after its retired_sequence. */
export async function pendingCount(db: Pool | Conn, s: SubscriptionRow, watermark?: string): Promise<number> {
  const unacked = await countUnacked(db, s.id);
  if (s.retired_at) return unacked;
  const wm = watermark ?? (await committedWatermark(db, s.namespace_id));
  return unacked + (await countUnmaterialized(db, filterOf(s), String(s.cursor_sequence), wm));
}

/** Sequences have no gaps and pruning removes a prefix, so the retained events are exactly
 * [oldest, head]. */
export async function assertNoGap(db: Pool | Conn, s: SubscriptionRow, watermark: string): Promise<void> {
  const cursor = BigInt(s.cursor_sequence);
  if (cursor >= BigInt(watermark)) return;
  const oldest = await oldestRetainedSequence(db, s.namespace_id);
  if (oldest === null || BigInt(oldest) > cursor + 1n) {
    throw new OrbitError(
      'EVENT_HISTORY_EXPIRED',
      `events after sequence ${cursor} were pruned (oldest retained: ${oldest ?? 'none'}); the subscription cannot be verified`,
      { cursor: cursor.toString(), oldest_retained: oldest },
    );
  }
}

export async function leaseDeliveries(pool: Pool, namespaceId: string, subscriptionId: string, max: number, leaseSeconds: number) {
  return withTransaction(pool, async (c) => {
    const s = (await getSubscription(c, namespaceId, subscriptionId, 'update'))!;
    if (s.retired_at) throw new OrbitError('RESOURCE_RETIRED', 'subscription is retired');
    if (s.paused === 1) return [];
    const wm = await committedWatermark(c, namespaceId);
    const cursor = String(s.cursor_sequence);
    if (BigInt(cursor) < BigInt(wm)) {
      await assertNoGap(c, s, wm);
      const seqs = await matchingSequences(c, filterOf(s), cursor, wm, MATERIALIZE_BATCH);
      const deliveries = seqs.map((sequence) => ({ id: newId(), sequence }));
      await insertDeliveries(c, s.id, namespaceId, deliveries);
      // A batch short of full means every matching event up to the watermark is materialized.
      await setCursor(c, s.id, seqs.length < MATERIALIZE_BATCH ? wm : seqs[seqs.length - 1]!);
    }
    await expireLeases(c, s.id);
    const expired = await lockLeasable(c, s.id, 'EXPIRED', max);
    const pending = await lockLeasable(c, s.id, 'PENDING', max);
    const chosen = [...expired, ...pending].sort((a, b) => Number(BigInt(a.sequence) - BigInt(b.sequence))).slice(0, max);
    const ids = chosen.map((d) => d.id);
    await leaseDeliveryRows(c, ids, leaseSeconds);
    const rows = await deliveriesByIds(c, ids);
    const sequences = rows.map((r) => String(r.sequence));
    const events = await eventsBySequence(c, namespaceId, sequences);
    const missing = rows.find((r) => !events.has(String(r.sequence)));
    if (missing) {
      throw new OrbitError('EVENT_HISTORY_EXPIRED', `event ${missing.sequence} of delivery ${missing.id} is no longer retained`, {
        sequence: String(missing.sequence),
      });
    }
    return rows.map((r) => {
      const v = deliveryView(r, events.get(String(r.sequence)));
      return { id: v.id, sequence: v.sequence, state: v.state, attempts: v.attempts, lease_expires_at: v.lease_expires_at, event: v.event };
    });
  });
}
