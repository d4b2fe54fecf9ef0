// The node's dispatcher: claim rounds for local sessions with free capacity. A wake-up (a commit on
// this node, a capacity change, or the adaptive poll for work from other nodes or come due by time:
// 10 ms after a poll that found work, doubling to 250 ms while polls find none) only marks sessions
// due; a claim round serves all its application's due sessions in one transaction
// (dispatch/claim.ts), and wake-ups during a round fold into the application's next (a `coalesce`
// of sessions grouped by application). When a round's read ran out of work for a session and it
// grants no key, that next round starts once the first has locked its candidates, beside its
// COMMIT: it reads past the locked rows and fills only the slots the first did not take
// (`pending`). Local wake-ups do not shorten the poll: a poll kept fast by them would run empty
// rounds on a busy node.
import type { Logger } from 'pino';
import { claimRound, ROUND_MAX_PER_SESSION, type ClaimRequest } from '../dispatch/claim.js';
import { coalesce } from '../dispatch/coalesce.js';
import type { Pool } from '../db/pool.js';
import type { Metrics } from '../metrics.js';
import type { Session } from './session.js';
import { guarded, isDatabaseRefusal } from '../boundary.js';
import { groupBy } from '../group-by.js';

/** What the dispatcher needs of its node (the gateway implements it). */
export interface DispatcherHost {
  readonly pool: Pool;
  readonly log: Logger;
  readonly metrics: Pick<Metrics, 'claimSeconds' | 'claimRounds' | 'tasksAssigned' | 'tokenExhausted' | 'internalErrors'>;
  /** The registered (open or draining) sessions of the node. */
  readonly sessions: ReadonlyMap<string, Session>;
  track<T>(p: Promise<T>): Promise<T>;
}

/** Rounds in flight at once: different applications', or an application's next beside its COMMIT. */
const MAX_PARALLEL = 2;
const MIN_POLL_MS = 10;
const MAX_POLL_MS = 250;

export class Dispatcher {
  /** Sessions waiting for their application's next round (each is queued in `rounds` too). */
  private readonly due = new Set<Session>();
  /** Due sessions that only the poll marked (no wake-up or kick since): a grant to one of them is
   * work the node was not told of, which keeps the poll fast. */
  private readonly polled = new Set<Session>();
  /** Per session, the slots the rounds in flight may fill. */
  private readonly pending = new Map<Session, number>();
  private readonly rounds = coalesce<Session, void>((_app, queued, yieldTurn) => this.host.track(this.round(queued, yieldTurn)), {
    maxBatch: Infinity,
    maxParallel: MAX_PARALLEL,
    maxPerGroup: 1,
  });
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
  wake(queueId: string): void {
    this.mark([...this.host.sessions.values()].filter((s) => s.claim?.queueIds.includes(queueId)));
  }

  kick(s: Session): void {
    this.mark([s]);
  }

  /** Queues the sessions not due yet for their application's next round, together. */
  private mark(sessions: Session[], byPoll = false): void {
    const fresh: Session[] = [];
    for (const s of sessions) {
      if (!byPoll) this.polled.delete(s);
      if (this.stopped || this.due.has(s)) continue;
      this.due.add(s);
      if (byPoll) this.polled.add(s);
      fresh.push(s);
    }
    // A round that throws (a bug: claimFor reports the database's refusals) is reported, never an
    // unhandled rejection.
    for (const [app, list] of groupBy(fresh, (s) => s.cred.applicationId)) {
      void guarded(this.host, 'claim-round', () => Promise.all(this.rounds.all(app, list)));
    }
  }

  private schedulePoll(): void {
    if (this.stopped) return;
    this.pollTimer = setTimeout(() => {
      void guarded(this.host, 'dispatcher-poll', () => {
        this.pollMs = this.productive ? MIN_POLL_MS : Math.min(MAX_POLL_MS, this.pollMs * 2);
        this.productive = false;
        this.mark(
          [...this.host.sessions.values()].filter((s) => s.slots.free > 0),
          true,
        );
      });
      this.schedulePoll();
    }, this.pollMs);
  }

  /** One claim round for the queued sessions still due (an earlier round's read may have satisfied
   * a queued session's mark). */
  private async round(queued: Session[], yieldTurn: () => void): Promise<void[]> {
    this.running++;
    try {
      const ready: Session[] = [];
      for (const s of queued) {
        if (!this.due.delete(s)) continue;
        if (s.state === 'open' && this.free(s) > 0 && !this.stopped) ready.push(s);
        // Closed or filled while queued: out of the poll's set too, which would hold it forever.
        else this.polled.delete(s);
      }
      await this.claimFor(ready, yieldTurn);
    } finally {
      if (--this.running === 0 && this.due.size === 0) for (const w of this.idleWaiters.splice(0)) w();
    }
    return queued.map(() => undefined);
  }

  /** Slots no round in flight may fill. */
  private free(s: Session): number {
    return s.slots.free - (this.pending.get(s) ?? 0);
  }

  private hold(s: Session, n: number): void {
    const left = (this.pending.get(s) ?? 0) + n;
    if (left > 0) this.pending.set(s, left);
    else this.pending.delete(s);
  }

  private async claimFor(due: Session[], yieldTurn: () => void): Promise<void> {
    if (due.length === 0) return;
    due.sort((a, b) => (this.lastServed.get(a) ?? 0) - (this.lastServed.get(b) ?? 0));
    const byPoll = new Set(due.filter((s) => this.polled.delete(s)));
    const reqs: ClaimRequest[] = due.map((s) => ({ session: s.claim, free: Math.min(ROUND_MAX_PER_SESSION, this.free(s)) }));
    const held = reqs.map((r) => r.free);
    due.forEach((s, i) => this.hold(s, held[i]!));
    const progress = {
      // Whatever made its sessions due until its candidate read is the round's to see.
      reading: () => {
        for (const s of due) {
          this.due.delete(s);
          this.polled.delete(s);
        }
      },
      // With a backlog the next round waits for this one's COMMIT and takes a full batch; only when
      // the read ran out of work for a session may work woken since get a round beside it. Keyed
      // work turns over one release at a time: a round beside each would split it into a round per
      // release, so a round that grants keys keeps the turn too.
      chosen: (perSession: Map<string, number>, keyed: boolean) => {
        let drained = false;
        due.forEach((s, i) => {
          const n = perSession.get(s.id) ?? 0;
          if (n < held[i]!) drained = true;
          this.hold(s, n - held[i]!);
          held[i] = n;
        });
        if (drained && !keyed) yieldTurn();
      },
    };
    // Before any delivery, which takes the granted slots (and may start the next round).
    const release = () => due.forEach((s, i) => this.hold(s, -held[i]!));
    const m = this.host.metrics;
    const started = process.hrtime.bigint();
    try {
      const r = await claimRound(this.host.pool, reqs, this.host.log, () => m.tokenExhausted.inc(), progress).finally(release);
      m.claimSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
      let granted = 0;
      due.forEach((s, i) => {
        const got = r.bySession.get(s.id) ?? [];
        if (r.revoked.has(s.id)) s.revoked();
        if (r.revoked.has(s.id) || got.length === 0) return;
        granted += got.length;
        if (byPoll.has(s)) this.productive = true;
        this.lastServed.set(s, ++this.served);
        s.deliver(got);
        // A full batch suggests more waiting work: due again for the next round.
        if (got.length === reqs[i]!.free && s.slots.free > 0) this.mark([s]);
      });
      m.claimRounds.inc({ result: granted > 0 ? 'granted' : 'empty' });
      if (granted > 0) m.tasksAssigned.inc(granted);
    } catch (err) {
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
