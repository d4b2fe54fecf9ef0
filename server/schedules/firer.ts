// The firing loop every node runs. Due schedules are found by a non-locking read and fired with
// SKIP LOCKED, so the nodes share them and each fire happens on exactly one node. The loop sleeps
// until the soonest fire it saw, at most IDLE_MS, and wakes at once on a local schedule change.
import type { AppContext } from '../app-context.js';
import { guarded, reportInternal } from '../boundary.js';
import { isRetryableDbError } from '../db/errors.js';
import { isConnectionError } from '../db/pool.js';
import { dueSchedules } from '../db/schedules.js';
import type { WorkSignalSource } from '../work-signals.js';
import { fireSchedules } from './fire.js';
import { groupBy } from '../group-by.js';

/** Longest sleep: how late a schedule created or resumed on another node is first seen. */
const IDLE_MS = 500;
/** Fire times within this horizon are read ahead, so the loop wakes exactly for the next one. */
const HORIZON_MS = 1_000;
/** Schedules read per round; due ones beyond it are read by the next round at once. */
const ROUND = 500;
/** Fire transactions in flight at once on one node; each holds a pool connection. */
const PARALLEL = 4;
/** Wake this long after the soonest fire time: timers fire up to a millisecond early, and fires
 * due within these milliseconds share one transaction. */
const WAKE_SLACK_MS = 10;

export class ScheduleFirer {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private again = false;
  private nextDelay = IDLE_MS;
  private lastOutage = 0;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly app: AppContext,
    signals: Pick<WorkSignalSource, 'onSchedulesChanged'>,
  ) {
    this.unsubscribe = signals.onSchedulesChanged(() => this.wake());
    this.arm(0);
  }

  wake(): void {
    if (this.running) this.again = true;
    else this.arm(0);
  }

  private arm(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), ms);
    this.timer.unref();
  }

  private run(): void {
    this.timer = null;
    this.nextDelay = IDLE_MS;
    this.running = guarded(this.app, 'schedule-fires', () => this.tick()).finally(() => {
      this.running = null;
      const delay = this.again ? 0 : this.nextDelay;
      this.again = false;
      this.arm(delay);
    });
  }

  private async tick(): Promise<void> {
    let rows;
    try {
      rows = await dueSchedules(this.app.pool, HORIZON_MS, ROUND);
    } catch (err) {
      if (!isConnectionError(err)) throw err;
      this.outage(err);
      return;
    }
    const due = rows.filter((r) => Number(r.wait_ms) <= 0);
    const soonest = rows.find((r) => Number(r.wait_ms) > 0);
    // Every node reads the same due list; a random order of applications spreads the nodes.
    const byApp = groupBy(
      due,
      (r) => r.application_id,
      (r) => r.id,
    );
    const groups = [...byApp.entries()];
    for (let i = groups.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [groups[i], groups[j]] = [groups[j]!, groups[i]!];
    }
    let fired = 0;
    let next = 0;
    const worker = async () => {
      while (next < groups.length && !this.stopped) {
        const [applicationId, ids] = groups[next++]!;
        try {
          for (let pending = ids; pending.length > 0 && !this.stopped;) {
            const reports = await fireSchedules(this.app, applicationId, pending);
            fired += reports.length;
            pending = reports.filter((r) => r.more).map((r) => r.scheduleId);
          }
        } catch (err) {
          if (isConnectionError(err)) this.outage(err);
          // Nothing committed: the schedules are still due next tick.
          else if (isRetryableDbError(err)) this.app.log.warn({ err, application_id: applicationId }, 'schedule fires skipped: database busy');
          else reportInternal(this.app, 'timer', err, { timer: 'schedule-fires', application_id: applicationId });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, groups.length) }, worker));
    if (due.length >= ROUND || (fired > 0 && due.length > 0)) this.nextDelay = 0;
    // Due rows another node held may still be due.
    else if (due.length > 0) this.nextDelay = 50;
    else if (soonest) this.nextDelay = Math.min(IDLE_MS, Number(soonest.wait_ms) + WAKE_SLACK_MS);
  }

  private outage(err: unknown): void {
    if (Date.now() - this.lastOutage > 10_000) this.app.log.warn({ err }, 'schedule fires paused: database unavailable');
    this.lastOutage = Date.now();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe();
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
