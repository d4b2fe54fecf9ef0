// Keyed tasks waiting with no capable session: sessions without the concurrency_keys flag never
// receive keyed tasks, so a keyed backlog in a queue that only flagless workers consume would wait
// forever in silence. Every few seconds each node counts them (by database, across all nodes),
// exports the gauge and logs one line per queue when it starts waiting. Also refreshes
// last_seen_at of this node's sessions: a session row of a node killed with -9 stays OPEN, and
// only sessions seen in the last 30 s count as capable.
import { capableSessionQueues, touchSessions } from '../db/worker-sessions.js';
import { keyedWaitingByQueue } from '../db/task-gauges.js';
import type { Gateway } from './ws-gateway.js';

export { SESSION_STALE_SECONDS } from '../db/worker-sessions.js';

export class CapabilityWatch {
  private readonly warned = new Set<string>();

  constructor(private readonly gw: Gateway) {}

  async tick(): Promise<void> {
    const pool = this.gw.app.pool;
    // One statement per application (every transaction touches one application's rows:
    // dispatch.md, "Scale-out").
    const byApp = new Map<string, string[]>();
    for (const s of this.gw.sessions.values()) {
      const ids = byApp.get(s.cred.applicationId) ?? [];
      ids.push(s.id);
      byApp.set(s.cred.applicationId, ids);
    }
    for (const ids of byApp.values()) {
      await touchSessions(pool, ids);
    }
    const waiting = await keyedWaitingByQueue(pool);
    if (waiting.length === 0) {
      this.gw.app.metrics.keyedWaitingNoCapable.set(0);
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
        this.gw.app.log.warn({ queue_id: q, keyed_waiting: Number(w.n) }, 'keyed tasks are waiting and no session with concurrency_keys consumes their queue');
      }
    }
    this.gw.app.metrics.keyedWaitingNoCapable.set(total);
  }
}
