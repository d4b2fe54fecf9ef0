// Keyed tasks waiting with no capable session would wait forever in silence: count them across
// all nodes, export the gauge, log once per queue. Also refreshes this node's sessions'
// last_seen_at, since only recently seen sessions count as capable.
import { capableSessionQueues, touchSessions } from '../db/worker-sessions.js';
import { keyedWaitingByQueue } from '../db/task-gauges.js';
import type { Logger } from 'pino';
import type { Pool } from '../db/pool.js';
import type { Metrics } from '../metrics.js';
import type { Session } from './session.js';

export interface CapabilityWatchHost {
  readonly pool: Pool;
  readonly log: Logger;
  readonly metrics: Pick<Metrics, 'keyedWaitingNoCapable'>;
  readonly sessions: ReadonlyMap<string, Pick<Session, 'id' | 'cred'>>;
}

export class CapabilityWatch {
  private readonly warned = new Set<string>();

  constructor(private readonly host: CapabilityWatchHost) {}

  async tick(): Promise<void> {
    const pool = this.host.pool;
    // One statement per application: every transaction touches one application's rows.
    const byApp = new Map<string, string[]>();
    for (const s of this.host.sessions.values()) {
      const ids = byApp.get(s.cred.applicationId) ?? [];
      ids.push(s.id);
      byApp.set(s.cred.applicationId, ids);
    }
    for (const ids of byApp.values()) {
      await touchSessions(pool, ids);
    }
    const waiting = await keyedWaitingByQueue(pool);
    if (waiting.length === 0) {
      this.host.metrics.keyedWaitingNoCapable.set(0);
      this.warned.clear();
      return;
    }
    const sessions = await capableSessionQueues(pool);
    const capable = new Set<string>();
    for (const s of sessions) for (const q of JSON.parse(s.queue_ids as string) as string[]) capable.add(q);
    let total = 0;
    for (const w of waiting) {
      const q = w.queue_id as string;
      if (capable.has(q)) {
        this.warned.delete(q);
        continue;
      }
      total += Number(w.n);
      if (!this.warned.has(q)) {
        this.warned.add(q);
        this.host.log.warn({ queue_id: q, keyed_waiting: Number(w.n) }, 'keyed tasks are waiting and no session with concurrency_keys consumes their queue');
      }
    }
    this.host.metrics.keyedWaitingNoCapable.set(total);
  }
}
