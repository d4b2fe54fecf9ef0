// The part of a SessionHost (session-host.ts) that every host does the same way: the gateway
// (ws-gateway.ts) and the in-process host of the session unit tests (test/support/session-host.ts)
// extend it, so the tests run the gateway's own tracking, wake-ups, kicks and release of undelivered
// attempts rather than a copy of them.
import type { Logger } from 'pino';
import type { Pool } from '../db/pool.js';
import type { WakeCause, WorkSignals } from '../work-signals.js';
import { releaseAttempts } from '../dispatch/revoke.js';
import type { StepAdvancer } from '../dispatch/ledger.js';
import type { Dispatcher } from './dispatcher.js';
import type { Session } from './session.js';

export abstract class SessionHostBase {
  abstract readonly pool: Pool;
  /** Workflow advancement for the transactions that release attempts. */
  abstract readonly advanceSteps: StepAdvancer;
  /** The node's signals: every wake-up goes through them. */
  abstract readonly signals: Pick<WorkSignals, 'wake'>;
  abstract readonly dispatcher: Pick<Dispatcher, 'kick'>;
  /** What shutdown waits for: replies after their commit, session row updates, claim rounds. */
  protected readonly inflight = new Set<Promise<unknown>>();

  /** Keeps a promise in the in-flight set so shutdown can wait for committed replies. */
  track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p)).catch(() => {});
    return p;
  }

  /** Queues whose permits were released or that got new work: through the node's signals, like
   * every other wake-up. */
  wake(queueIds: Iterable<string>, cause?: WakeCause): void {
    this.signals.wake(queueIds, cause);
  }

  kick(s: Session): void {
    this.dispatcher.kick(s);
  }

  /** Attempts claimed for a session that drained or closed before delivery: released at once
   * (attempt EXPIRED, task WAITING, permits back) in one transaction. */
  releaseUndelivered(s: Session, attemptIds: string[]): void {
    this.release({ namespaceId: s.cred.namespaceId, workerId: s.workerId }, attemptIds, s.log);
  }

  /** Attempts granted but never delivered: EXPIRED, tasks WAITING, permits back, queues woken; on
   * failure they expire with their lease. */
  protected release(who: { namespaceId: string; workerId: string }, attemptIds: string[], log: Logger): void {
    void this.track(
      releaseAttempts(this.pool, this.advanceSteps, who, attemptIds)
        .then((freed) => this.wake(freed))
        .catch((err) => log.warn({ err, attempts: attemptIds }, 'could not release undelivered attempts; they expire with their lease')),
    );
  }
}
