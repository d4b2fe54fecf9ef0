// Periodic work of every node: the sweeper, and reconciliation of local sessions with changes
// other nodes made.
import type { StepAdvancer } from '../dispatch/ledger.js';
import { sweep } from '../dispatch/sweeper.js';
import { sweepWorkflows } from '../workflows/sweep.js';
import { isConnectionError } from '../db/pool.js';
import { attemptHolders } from '../db/attempts.js';
import { revokedCredentialIds } from '../db/credentials.js';
import { currentSessionsAmong } from '../db/worker-identities.js';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { WorkSignals } from '../work-signals.js';
import type { Session } from './session.js';
import { SUPERSEDED } from './session-host.js';
import { CapabilityWatch, type CapabilityWatchHost } from './capability-watch.js';
import { guarded, reportInternal } from '../boundary.js';
import { isRetryableDbError } from '../db/errors.js';

export interface ReconcilerHost extends CapabilityWatchHost {
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
  private readonly watch: CapabilityWatch;

  constructor(private readonly host: ReconcilerHost) {
    this.watch = new CapabilityWatch(host);
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
      const m = app.metrics.sweeperRecovered;
      if (r.counts.leasedExpired) m.inc({ kind: 'leased_expired' }, r.counts.leasedExpired);
      if (r.counts.runningExpired) m.inc({ kind: 'running_expired' }, r.counts.runningExpired);
      if (r.counts.deadlineLeased) m.inc({ kind: 'deadline_leased' }, r.counts.deadlineLeased);
      if (r.counts.deadlineWaiting) m.inc({ kind: 'deadline_waiting' }, r.counts.deadlineWaiting);
      app.signals.revoked(r.revoked);
      app.signals.wake(r.freedQueues);
      const w = await sweepWorkflows(app.pool);
      app.signals.wake(w.queues);
      for (const f of w.failed) {
        if (isRetryableDbError(f.err)) app.log.warn({ err: f.err, run_id: f.runId }, 'workflow sweep left a run for the next tick: database busy');
        else reportInternal(app, 'timer', f.err, { timer: 'sweep-workflows', run_id: f.runId });
      }
      await this.reconcileSessions();
      if (this.ticks++ % WATCH_EVERY === 0) await this.watch.tick();
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

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
