// Queue depth and oldest-waiting age, read from the database at scrape time. The query walks the
// WAITING rows, so results are cached briefly to bound what frequent scrapes cost.
import client from 'prom-client';
import type { Pool } from './db/pool.js';
import { waitingDepthByQueue } from './db/task-gauges.js';
import type { Metrics } from './metrics.js';

const CACHE_MS = 2_000;

interface QueueDepth {
  queue_id: string;
  queue: string;
  depth: number;
  oldest_s: number;
}

export function registerQueueGauges(metrics: Metrics, pool: Pool): void {
  let cached: { at: number; rows: QueueDepth[] } | null = null;
  const read = async (): Promise<QueueDepth[]> => {
    if (cached && Date.now() - cached.at < CACHE_MS) return cached.rows;
    const rows = await waitingDepthByQueue(pool);
    const out = rows.map((r) => ({
      queue_id: r.queue_id,
      queue: r.name,
      depth: Number(r.depth),
      oldest_s: r.age_us === null ? 0 : Math.max(0, Number(r.age_us) / 1e6),
    }));
    cached = { at: Date.now(), rows: out };
    return out;
  };
  // Both gauges come from one query; whichever is collected first refreshes the cache.
  const gauge = (name: string, help: string, value: (r: QueueDepth) => number) => {
    const g: client.Gauge<'queue_id' | 'queue'> = new client.Gauge({
      name,
      help,
      labelNames: ['queue_id', 'queue'],
      // Every process of a node reads the same rows: ORBIT_PROCESSES > 1 reports one, not a sum.
      aggregator: 'max',
      registers: [metrics.registry],
      async collect() {
        const rows = await read().catch(() => null);
        if (!rows) return; // database unreachable: keep the last values rather than fail the scrape
        g.reset();
        for (const r of rows) g.set({ queue_id: r.queue_id, queue: r.queue }, value(r));
      },
    });
  };
  gauge('orbit_queue_depth', 'WAITING tasks per queue (all nodes; from the database at scrape time)', (r) => r.depth);
  gauge('orbit_queue_oldest_waiting_seconds', 'age of the oldest due WAITING task per queue, in seconds (from the database at scrape time)', (r) => r.oldest_s);
}
