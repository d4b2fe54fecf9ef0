// Result-event retention: events older than ORBIT_EVENT_RETENTION_SECONDS (default 7 days) are
// pruned, oldest first, per namespace, by one node at a time (a named GET_LOCK per database; the
// other nodes skip the round; node-local under Galera, where two pruners only delete the same
// prefix twice). Pruning always removes a *prefix* of a namespace's stream, so the
// retained events are a contiguous range [oldest, head] and a consumer whose cursor is behind the
// oldest retained event can be told so (410 EVENT_HISTORY_EXPIRED) instead of silently skipping.
// Events referenced by a delivery that is not yet acknowledged are kept (a materialized delivery
// must still be deliverable), so the prefix stops before the oldest unacknowledged delivery of
// any non-retired subscription of the namespace.
import type { Pool } from '../db/pool.js';
import { deleteEventsUpTo, oldestUnackedSequence, pruneCandidates } from '../db/event-retention.js';
import { releasePruneLock, tryPruneLock } from '../mariadb/named-locks.js';
import type { AppContext } from '../app-context.js';
import { guarded, isDatabaseRefusal } from '../boundary.js';

export interface PruneReport {
  /** false when another node held the pruning lock (nothing done). */
  ran: boolean;
  deleted: number;
}

const BATCH = 5000;

/** One pruning round (cutoff by database time). */
export async function pruneEvents(pool: Pool, retentionSeconds: number): Promise<PruneReport> {
  const conn = await pool.getConnection();
  try {
    if (!(await tryPruneLock(conn))) return { ran: false, deleted: 0 };
    try {
      let deleted = 0;
      // Per namespace, the newest sequence older than the cutoff (occurred_at is taken under the
      // head lock, so it does not decrease along the stream; the prefix is by sequence anyway).
      const old = await pruneCandidates(conn, retentionSeconds);
      for (const r of old) {
        const ns = r.namespace_id;
        let upto = BigInt(r.upto);
        const keep = await oldestUnackedSequence(conn, ns);
        if (keep !== null && BigInt(keep) - 1n < upto) upto = BigInt(keep) - 1n;
        for (;;) {
          const n = await deleteEventsUpTo(conn, ns, upto.toString(), BATCH);
          deleted += n;
          if (n < BATCH) break;
        }
      }
      return { ran: true, deleted };
    } finally {
      await releasePruneLock(conn);
    }
  } finally {
    conn.release();
  }
}

/** Every node runs this timer; the lock makes one node prune at a time. */
export class EventPruner {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly app: AppContext,
    private readonly everyMs = 60_000,
  ) {
    this.schedule(5_000 + Math.floor(Math.random() * 5_000));
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = guarded(this.app, 'prune-events', () => this.tick()).finally(() => {
        this.running = null;
        this.schedule(this.everyMs);
      });
    }, ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    try {
      const r = await pruneEvents(this.app.pool, this.app.config.eventRetentionSeconds);
      if (r.deleted > 0) this.app.log.info({ deleted: r.deleted }, 'pruned result events past retention');
    } catch (err) {
      if (isDatabaseRefusal(err)) this.app.log.warn({ err }, 'event pruning skipped: database unavailable or busy');
      else this.app.log.error({ err }, 'event pruning failed');
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
