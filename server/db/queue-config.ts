// Queue configuration that start and result need, cached for a few seconds so coalesced
// transactions need no statement for it. It is configuration, not a permit, and nothing changes
// these columns after creation.
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn } from './pool.js';
import { placeholders } from './placeholders.js';

export interface QueueConfig {
  leaseSeconds: number;
  retry: { initial: number; max: number; multiplier: number };
}

const TTL_MS = 5_000;
const cache = new Map<string, { v: QueueConfig; at: number }>();

/** Config per queue id (unknown ids are absent); one statement for the ids not cached. */
export async function queueConfigs(c: Conn, ids: Iterable<string>): Promise<Map<string, QueueConfig>> {
  const out = new Map<string, QueueConfig>();
  const missing: string[] = [];
  const now = Date.now();
  for (const id of new Set(ids)) {
    const hit = cache.get(id);
    if (hit && now - hit.at < TTL_MS) out.set(id, hit.v);
    else missing.push(id);
  }
  if (missing.length > 0) {
    const [rows] = await c.query<RowDataPacket[]>(
      `SELECT id, lease_seconds, retry_initial_backoff_ms, retry_max_backoff_ms, retry_multiplier FROM queues WHERE id IN (${placeholders(missing.length)})`,
      missing,
    );
    if (cache.size > 10_000) cache.clear();
    for (const r of rows) {
      const v: QueueConfig = {
        leaseSeconds: Number(r.lease_seconds),
        retry: { initial: Number(r.retry_initial_backoff_ms), max: Number(r.retry_max_backoff_ms), multiplier: Number(r.retry_multiplier) },
      };
      cache.set(r.id as string, { v, at: now });
      out.set(r.id as string, v);
    }
  }
  return out;
}
