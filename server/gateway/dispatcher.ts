// The node's dispatcher: claim rounds for local sessions with free capacity. A wake-up (a commit on
// this node, a capacity change, or the adaptive poll for work from other nodes or come due by time:
// 10 ms after a poll that found work, doubling to 250 ms while polls find none) only marks sessions
// due; one claim round per application serves all its due sessions in one transaction
// (dispatch/claim.ts). Wake-ups during a round fold into the next, except new work woken after the
// round's candidate read was sent: once that read drained the queue for a session, a second round
// starts beside the first. Two rounds stay exact: each fills only the slots it reserved, SKIP LOCKED
// gives each candidate to one, and the permits are conditional updates at each COMMIT. Local
// wake-ups do not shorten the poll: a poll kept fast by them would run empty rounds on a busy node.
// Not a `coalesce`: a session is due or not, and a round's read satisfies every mark made before it.
import type { Logger } from 'pino';
import { claimRound, ROUND_MAX_PER_SESSION, type ClaimRequest, type RoundProgress } from '../dispatch/claim.js';
import type { WakeCause } from '../work-signals.js';
import type { Pool } from '../db/pool.js';
import type { Metrics } from '../metrics.js';
import type { Session } from './session.js';
import type { SlotReservation } from './session-slots.js';
import { guarded, isDatabaseRefusal } from '../boundary.js';

/** What the dispatcher needs of its node (the gateway implements it). */
export interface DispatcherHost {
  readonly pool: Pool;
  readonly log: Logger;
  readonly metrics: Pick<Metrics, 'claimSeconds' | 'claimRounds' | 'tasksAssigned' | 'tokenExhausted' | 'internalErrors'>;
  /** The registered (open or draining) sessions of the node. */
  readonly sessions: ReadonlyMap<string, Session>;
  track<T>(p: Promise<T>): Promise<T>;
}

/** Rounds in flight at once: different applications', or an application's second, which starts
 * only for work woken after the first's candidate read. */
const MAX_PARALLEL = 2;
const MIN_POLL_MS = 10;
const MAX_POLL_MS = 250;

export class Dispatcher {
  private readonly due = new Set<Session>();
  /** Due sessions that only the poll marked (no wake-up or kick since): a grant to one of them is
   * work the node was not told of, which keeps the poll fast. */
  private readonly polled = new Set<Session>();
  /** Per application with rounds in flight: how many, and how many have not answered their
   * candidate read yet (while one has not, no second round starts: it would read the same). */
  private readonly inFlight = new Map<string, { rounds: number; unread: number }>();
  /** Due sessions woken by new work that no round in flight was reading for when it came: they may
   * get a round next to their application's round in flight. */
  private readonly woken = new Set<Session>();
  private running = 0;
  private stopped = false;
  private pollMs = MIN_POLL_MS;
  private pollTimer: NodeJS.Timeout | null = null;
  /** Per session, the serve count at its last assignment: a round lists its sessions least recently
   * served first, so equal-priority work goes round-robin across rounds too (docs/guarantees.md). */
  private readonly lastServed = new WeakMap<Session, number>();
  private served = 0;
  private productive = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly host: DispatcherHost) {
    this.schedulePoll();
  }

  /** A queue got new work or freed permits (WorkSignals.wake): its sessions are due. */
  wake(queueId: string, cause: WakeCause = 'work'): void {
    if (this.stopped) return;
    for (const s of this.host.sessions.values()) {
      if (!s.claim?.queueIds.includes(queueId)) continue;
      this.mark(s);
      if (cause === 'work') this.woken.add(s);
    }
    this.pump();
  }

  kick(s: Session): void {
    if (this.stopped) return;
    this.mark(s);
    this.pump();
  }

  private mark(s: Session): void {
    this.due.add(s);
    this.polled.delete(s);
  }

  private schedulePoll(): void {
    if (this.stopped) return;
    this.pollTimer = setTimeout(() => {
      void guarded(this.host, 'dispatcher-poll', () => {
        this.pollMs = this.productive ? MIN_POLL_MS : Math.min(MAX_POLL_MS, this.pollMs * 2);
        this.productive = false;
        for (const s of this.host.sessions.values()) {
          if (s.slots.free <= 0 || this.due.has(s)) continue;
          this.due.add(s);
          this.polled.add(s);
        }
        this.pump();
      });
      this.schedulePoll();
    }, this.pollMs);
  }

  /** Whether a round of application `a` may start now for due session `s`: none in flight, or one
   * that has read its candidates while `s` was woken by work that read could not see. */
  private mayStart(a: string, s: Session): boolean {
    const f = this.inFlight.get(a);
    return !f || (f.unread === 0 && this.woken.has(s));
  }

  private pump(): void {
    while (!this.stopped && this.running < MAX_PARALLEL) {
      // The due sessions with free slots of the first application that may start a round.
      let app: string | undefined;
      const sessions: Session[] = [];
      for (const s of this.due) {
        // A session whose slots are all a round's in flight stays due only for new work woken after
        // that round's read was sent: the round cannot see it. Anything else is that round's to see.
        if (s.state !== 'open' || (s.slots.free <= 0 && (s.slots.fullButForRound || !this.woken.has(s)))) {
          this.due.delete(s);
          this.polled.delete(s);
          this.woken.delete(s);
          continue;
        }
        if (s.slots.free <= 0) continue;
        const a = s.cred.applicationId;
        if (app === undefined && !this.mayStart(a, s)) continue;
        app ??= a;
        if (a === app) sessions.push(s);
      }
      if (!app) break;
      for (const s of sessions) {
        this.due.delete(s);
        this.woken.delete(s);
      }
      const a = app;
      const f = this.inFlight.get(a) ?? { rounds: 0, unread: 0 };
      this.inFlight.set(a, f);
      f.rounds++;
      f.unread++;
      this.running++;
      let unread = true;
      const readDone = () => {
        if (!unread) return;
        unread = false;
        f.unread--;
      };
      void this.host.track(this.round(sessions, readDone)).finally(() => {
        readDone();
        this.running--;
        if (--f.rounds === 0) this.inFlight.delete(a);
        if (this.running === 0 && this.due.size === 0) for (const w of this.idleWaiters.splice(0)) w();
        this.pump();
      });
    }
  }

  /** One claim round for `due`; `readDone` once its candidate read answered. */
  private async round(due: Session[], readDone: () => void): Promise<void> {
    due.sort((a, b) => (this.lastServed.get(a) ?? 0) - (this.lastServed.get(b) ?? 0));
    const byPoll = new Set(due.filter((s) => this.polled.delete(s)));
    // The slots this round may fill are reserved while it runs (session-slots.ts), so that a round
    // next to it cannot fill them too.
    const sessions: { s: Session; slot: SlotReservation; reserved: number }[] = [];
    for (const s of due) {
      const slot = s.slots.reserve(ROUND_MAX_PER_SESSION);
      if (slot) sessions.push({ s, slot, reserved: slot.size });
    }
    const reqs: ClaimRequest[] = sessions.map(({ s, slot }) => ({ session: s.claim, free: slot.size }));
    const progress: RoundProgress = {
      // Whatever made its sessions due until now is this round's to see (a full batch makes a
      // session due again).
      reading: () => {
        for (const { s } of sessions) {
          this.due.delete(s);
          this.polled.delete(s);
          this.woken.delete(s);
        }
      },
      // The slots it cannot fill are free again; a second round may start for work woken since only
      // when the read drained the queue for a session (with a backlog it would only split the work).
      read: () => {
        let drained = false;
        sessions.forEach(({ slot }, i) => {
          if (reqs[i]!.free < slot.size) drained = true;
          slot.shrink(reqs[i]!.free);
        });
        if (!drained) return;
        readDone();
        this.pump();
      },
    };
    const m = this.host.metrics;
    const started = process.hrtime.bigint();
    try {
      const r = await claimRound(this.host.pool, reqs, this.host.log, () => m.tokenExhausted.inc(), progress);
      m.claimSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
      let granted = 0;
      for (const { s, slot, reserved } of sessions) {
        const got = r.bySession.get(s.id) ?? [];
        if (r.revoked.has(s.id) || got.length === 0) {
          slot.release();
          if (r.revoked.has(s.id)) s.revoked();
          continue;
        }
        granted += got.length;
        if (byPoll.has(s)) this.productive = true;
        this.lastServed.set(s, ++this.served);
        s.deliver(slot, got);
        // A full batch suggests more waiting work: due again for the next round.
        if (got.length === reserved && s.slots.free > 0) this.due.add(s);
      }
      m.claimRounds.inc({ result: granted > 0 ? 'granted' : 'empty' });
      if (granted > 0) m.tasksAssigned.inc(granted);
    } catch (err) {
      for (const { slot } of sessions) slot.release();
      m.claimRounds.inc({ result: 'failed' });
      if (isDatabaseRefusal(err)) this.host.log.warn({ err }, 'claim round failed: database unavailable or busy');
      else this.host.log.error({ err }, 'claim round failed');
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.pollTimer) clearTimeout(this.pollTimer);
  }

  idle(): Promise<void> {
    if (this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
