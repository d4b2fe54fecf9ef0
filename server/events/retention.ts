// Result-event retention, by one node at a time (a named GET_LOCK; under Galera it is node-local
// and two pruners only delete the same prefix twice). Pruning always removes a prefix of a
// namespace's stream, so a consumer whose cursor is behind the oldest retained event can be told so
// (410) instead of silently skipping. The prefix stops before the oldest unacknowledged delivery:
// a materialized delivery must stay deliverable.
import type { Pool } from '../db/pool.js';
import { deleteEventsUpTo, oldestUnackedSequence, pruneCandidates } from '../db/event-retention.js';
import { releasePruneLock, tryPruneLock } from '../mariadb/named-locks.js';
import type { AppContext } from '../app-context.js';
import { guarded } from '../boundary.js';

const BATCH = 5000;
const EVERY_MS = 60_000;

/** `ran` false: another node held the pruning lock. */
export async function pruneEvents(pool: Pool, retentionSeconds: number): Promise<{ ran: boolean; deleted: number }> {
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

/** Prunes every minute, the first time 5-10 s after the start so that nodes started together spread. */
export function startEventPruner(app: AppContext): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const schedule = (ms: number): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = guarded(app, 'prune-events', async () => {
        const r = await pruneEvents(app.pool, app.config.eventRetentionSeconds);
        if (r.deleted > 0) app.log.info({ deleted: r.deleted }, 'pruned result events past retention');
      }).finally(() => schedule(EVERY_MS));
    }, ms);
    timer.unref();
  };
  schedule(5_000 + Math.floor(Math.random() * 5_000));
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
