// Result-event retention, by one node at a time (a named GET_LOCK; under Galera it is node-local
// and two pruners only delete the same prefix twice). Pruning always removes a prefix of a
// namespace's stream, so a consumer whose cursor is behind the oldest retained event can be told so
// (410) instead of silently skipping. The prefix stops before the oldest unacknowledged delivery:
// a materialized delivery must stay deliverable.
import type { Pool } from '../db/pool.js';
import { deleteEventsUpTo, oldestUnackedSequence, pruneCandidates } from '../db/event-retention.js';
import { releasePruneLock, tryPruneLock } from '../mariadb/named-locks.js';
import type { AppContext } from '../app-context.js';
import { guarded, isDatabaseRefusal } from '../boundary.js';

export interface PruneReport {
  /** false when another node held the pruning lock. */
  ran: boolean;
  deleted: number;
}

const BATCH = 5000;
const EVERY_MS = 60_000;

export async function pruneEvents(pool: Pool, retentionSeconds: number): Promise<PruneReport> {
  const conn = await pool.getConnection();
  try {
    if (!(await tryPruneLock(conn))) return { ran: false, deleted: 0 };
    try {
      let deleted = 0;
      // occurred_at is taken under the head lock, so it does not decrease along the stream.
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

export class EventPruner {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly app: AppContext) {
    this.schedule(5_000 + Math.floor(Math.random() * 5_000));
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = guarded(this.app, 'prune-events', () => this.tick()).finally(() => {
        this.running = null;
        this.schedule(EVERY_MS);
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
