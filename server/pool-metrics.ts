// The database pool's gauges, read from mysql2's pool at scrape time. A waiting count above zero
// means a flood got past the sessions' transaction admission (`admission`, dispatch/coalesce.ts).
import client from 'prom-client';
import type { Pool } from './db/pool.js';
import type { Metrics } from './metrics.js';

/** mysql2 internals (lib/base/pool.js; the promise pool wraps the core pool as `.pool`). */
interface CorePool {
  _allConnections?: { length: number };
  _freeConnections?: { length: number };
  _connectionQueue?: { length: number };
}

/** Checked out and waiting, or null when the pool's internals are not where mysql2 3.x keeps them. */
export function poolUsage(pool: Pool): { inUse: number; waiting: number } | null {
  const core = (pool as unknown as { pool?: CorePool }).pool;
  if (!core?._allConnections || !core._freeConnections || !core._connectionQueue) return null;
  return { inUse: core._allConnections.length - core._freeConnections.length, waiting: core._connectionQueue.length };
}

export function registerPoolGauges(metrics: Metrics, pool: Pool): void {
  const gauge = (name: string, help: string, value: (u: { inUse: number; waiting: number }) => number) => {
    const g: client.Gauge = new client.Gauge({
      name,
      help,
      registers: [metrics.registry],
      collect() {
        const u = poolUsage(pool);
        if (u) g.set(value(u));
      },
    });
  };
  gauge('orbit_db_pool_connections_in_use', 'database pool connections checked out', (u) => u.inUse);
  gauge('orbit_db_pool_queue_depth', 'requests waiting for a database pool connection', (u) => u.waiting);
}
