// Periodic work of every node: the sweeper, reconciliation of local sessions with changes other
// nodes made, and the watch for keyed tasks waiting with no capable session.
import type { StepAdvancer } from '../dispatch/ledger.js';
import { sweep } from '../dispatch/sweeper.js';
import { sweepWorkflows } from '../workflows/sweep.js';
import { isConnectionError, type Pool } from '../db/pool.js';
import { attemptHolders } from '../db/attempts.js';
import { revokedCredentialIds } from '../db/credentials.js';
import { currentSessionsAmong } from '../db/worker-identities.js';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { WorkSignals } from '../work-signals.js';
import type { Session } from './session.js';
import { SUPERSEDED } from './session-host.js';
import { capableSessionQueues, touchSessions } from '../db/worker-sessions.js';
import { keyedWaitingByQueue } from '../db/task-gauges.js';
import type { Logger } from 'pino';
import { guarded, reportInternal } from '../boundary.js';
import { isRetryableDbError } from '../db/errors.js';
import { groupBy } from '../group-by.js';

export interface ReconcilerHost {
  readonly pool: Pool;
  readonly log: Logger;
  readonly config: Pick<Config, 'sweepIntervalMs'>;
  readonly metrics: Pick<Metrics, 'sweeperRecovered' | 'keyedWaitingNoCapable' | 'internalErrors'>;
  readonly advanceSteps: StepAdvancer;
  readonly sessions: ReadonlyMap<string, Session>;
  readonly signals: Pick<WorkSignals, 'wake' | 'revoked'>;
  track<T>(p: Promise<T>): Promise<T>;
}

const WATCH_EVERY = 10;

export class Reconciler {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private ticks = 0;
  /** Queues already logged as having keyed tasks and no capable session. */
  private readonly warned = new Set<string>();

  constructor(private readonly host: ReconcilerHost) {
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      // guarded() logs and swallows a failed tick; the next one is scheduled either way.
      void this.host.track(guarded(this.host, 'sweep', () => this.tick())).finally(() => this.schedule());
    }, this.host.config.sweepIntervalMs);
  }

  async tick(): Promise<void> {
    const app = this.host;
    try {
      const r = await sweep(app.pool, app.advanceSteps);
      // A busy database is retried by the next tick; anything else is a bug on that row.
      for (const f of r.failed) {
        const where = { application_id: f.applicationId, row: f.row };
        if (isRetryableDbError(f.err) || isConnectionError(f.err)) app.log.warn({ err: f.err, ...where }, 'sweep left a row for the next tick: database busy');
        else reportInternal(app, 'timer', f.err, { timer: 'sweep', ...where });
      }
      for (const [kind, n] of Object.entries(r.counts)) if (n > 0) app.metrics.sweeperRecovered.inc({ kind }, n);
      app.signals.revoked(r.revoked);
      app.signals.wake(r.freedQueues);
      const w = await sweepWorkflows(app.pool);
      app.signals.wake(w.queues);
      for (const f of w.failed) {
        if (isRetryableDbError(f.err)) app.log.warn({ err: f.err, run_id: f.runId }, 'workflow sweep left a run for the next tick: database busy');
        else reportInternal(app, 'timer', f.err, { timer: 'sweep-workflows', run_id: f.runId });
      }
      await this.reconcileSessions();
      if (this.ticks++ % WATCH_EVERY === 0) await this.watchCapability();
    } catch (err) {
      if (isConnectionError(err) || isRetryableDbError(err)) app.log.warn({ err }, 'sweep skipped: database unavailable or busy');
      else app.log.error({ err }, 'sweep failed');
    }
  }

  private async reconcileSessions(): Promise<void> {
    const sessions = [...this.host.sessions.values()];
    if (sessions.length === 0) return;
    const pool = this.host.pool;
    const held = sessions.flatMap((s) => [...s.slots.held.keys()].map((id) => ({ id, s })));
    for (let i = 0; i < held.length; i += 500) {
      const chunk = held.slice(i, i + 500);
      const ids = chunk.map((h) => h.id);
      const rows = await attemptHolders(pool, ids);
      const byId = new Map(rows.map((r) => [r.id as string, r]));
      for (const { id, s } of chunk) {
        const r = byId.get(id);
        if (!r) continue;
        const live = r.state === 'LEASED' || r.state === 'RUNNING';
        if (live && r.session_id === s.id) continue;
        if (!s.slots.held.has(id)) continue;
        if (!live && r.result_fingerprint === null) {
          const reason = r.error_code === 'CANCELLED' ? 'CANCELLED' : r.error_code === 'DEADLINE_EXCEEDED' ? 'DEADLINE_EXCEEDED' : 'LEASE_EXPIRED';
          s.cancelAttempt(id, reason);
        } else s.dropAttempt(id);
      }
    }
    const ids = sessions.map((s) => s.id);
    const current = new Set(await currentSessionsAmong(pool, ids));
    for (const s of sessions) {
      if (s.state === 'closed' || current.has(s.id)) continue;
      s.terminate(4409, SUPERSEDED, 'STATE_CONFLICT');
    }
    const credIds = [...new Set(sessions.filter((s) => s.state !== 'closed').map((s) => s.cred.id))];
    if (credIds.length === 0) return;
    const gone = new Set(await revokedCredentialIds(pool, credIds));
    for (const s of sessions) {
      if (s.state === 'closed' || !gone.has(s.cred.id)) continue;
      s.revoked();
    }
  }

  /** Keyed tasks waiting with no capable session would wait forever in silence: counted across all
   * nodes, exported as a gauge, logged once per queue. Also refreshes this node's sessions'
   * last_seen_at, since only recently seen sessions count as capable. */
  private async watchCapability(): Promise<void> {
    const pool = this.host.pool;
    // One statement per application: every transaction touches one application's rows.
    const byApp = groupBy(
      this.host.sessions.values(),
      (s) => s.cred.applicationId,
      (s) => s.id,
    );
    for (const ids of byApp.values()) await touchSessions(pool, ids);
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

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
