import type { StepAdvancer } from '../dispatch/ledger.js';
import type { Logger } from 'pino';
import type { Pool } from '../db/pool.js';
import type { FrameCommitter } from '../dispatch/frame-committer.js';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { Admit } from '../dispatch/coalesce.js';
import type { WorkSignals } from '../work-signals.js';

export type SessionState = 'hello' | 'open' | 'draining' | 'closed';

/** Why a session ends with 4409: a newer session of its worker_id said hello. */
export const SUPERSEDED = 'superseded by a newer session of this worker_id';

/** Implemented by the gateway, and by tests around a real pool. `Session` stands for session.ts's
 * class, which imports this module. */
type Session = object;

export interface SessionHost {
  readonly pool: Pool;
  /** Workflow advancement for hello's transaction, which may release step tasks. */
  readonly advanceSteps: StepAdvancer;
  readonly config: Pick<Config, 'maxFrameBytes' | 'nodeId' | 'helloTimeoutMs' | 'pongTimeoutMs' | 'sessionMaxFramesInFlight' | 'sessionMaxBytesInFlight'>;
  readonly metrics: Pick<
    Metrics,
    'tasksFinished' | 'internalErrors' | 'sessionStalls' | 'sessionFramesInFlight' | 'sessionsPaused' | 'sessionPauses' | 'renewBatchSize'
  >;
  readonly admission: Admit;
  readonly log: Logger;
  readonly frames: FrameCommitter;
  register(s: Session): void;
  unregister(s: Session): void;
  track<T>(p: Promise<T>): Promise<T>;
  readonly signals: Pick<WorkSignals, 'wake'>;
  kick(s: Session): void;
  releaseUndelivered(s: Session, attemptIds: string[]): void;
}
