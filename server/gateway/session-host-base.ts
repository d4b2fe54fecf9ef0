// The part of a SessionHost every host does the same way, shared with the session tests' host so
// the tests run the gateway's own code.
import type { Pool } from '../db/pool.js';
import type { WorkSignals } from '../work-signals.js';
import { releaseAttempts } from '../dispatch/revoke.js';
import type { StepAdvancer } from '../dispatch/ledger.js';
import type { Dispatcher } from './dispatcher.js';
import type { Session } from './session.js';

export abstract class SessionHostBase {
  abstract readonly pool: Pool;
  abstract readonly advanceSteps: StepAdvancer;
  abstract readonly signals: Pick<WorkSignals, 'wake'>;
  abstract readonly dispatcher: Pick<Dispatcher, 'kick'>;
  protected readonly inflight = new Set<Promise<unknown>>();

  track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p)).catch(() => {});
    return p;
  }

  kick(s: Session): void {
    this.dispatcher.kick(s);
  }

  /** Attempts claimed for a session that closed before delivery, released at once; on failure they
   * expire with their lease. */
  releaseUndelivered(s: Session, attemptIds: string[]): void {
    void this.track(
      releaseAttempts(this.pool, this.advanceSteps, { namespaceId: s.cred.namespaceId, workerId: s.workerId }, attemptIds)
        .then((freed) => this.signals.wake(freed))
        .catch((err) => s.log.warn({ err, attempts: attemptIds }, 'could not release undelivered attempts; they expire with their lease')),
    );
  }
}
