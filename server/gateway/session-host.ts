// What a session needs of its node, and its states (session.ts).
import type { StepAdvancer } from '../dispatch/ledger.js';
import type { Logger } from 'pino';
import type { Pool } from '../db/pool.js';
import type { WakeCause } from '../work-signals.js';
import type { FrameCommitter } from '../dispatch/frame-committer.js';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { TxAdmission } from './tx-admission.js';

export type SessionState = 'hello' | 'open' | 'draining' | 'closed';

/** Why a session ends with STATE_CONFLICT, 4409: a newer session of its worker_id said hello. */
export const SUPERSEDED = 'superseded by a newer session of this worker_id';

/** What a session needs of its node (BullMQ's LockManagerWorkerContext idea): the gateway
 * implements it; a test can implement it around a real pool without a WebSocket server. */
/** A Session (session.ts, which imports this module, so it is not imported here); the gateway's
 * methods take the Session itself (method parameters are compared bivariantly). */
type Session = object;

export interface SessionHost {
  readonly pool: Pool;
  /** Workflow advancement for hello's transaction (it may release step tasks). */
  readonly advanceSteps: StepAdvancer;
  readonly config: Pick<Config, 'maxFrameBytes' | 'nodeId' | 'helloTimeoutMs' | 'pongTimeoutMs' | 'sessionMaxFramesInFlight' | 'sessionMaxBytesInFlight'>;
  readonly metrics: Pick<
    Metrics,
    'tasksFinished' | 'internalErrors' | 'sessionStalls' | 'sessionFramesInFlight' | 'sessionsPaused' | 'sessionPauses' | 'renewBatchSize'
  >;
  /** Turns at the pool for the session's own transactions (renew, hello, its row), per application. */
  readonly admission: Pick<TxAdmission, 'run'>;
  readonly log: Logger;
  /** start and result frames, coalesced with other sessions' (server/dispatch/frame-committer.ts). */
  readonly frames: Pick<FrameCommitter, 'run'>;
  /** Hello committed: claims from now on (an older session of the worker_id ends). */
  register(s: Session): void;
  /** The session ended: no more claims for it. */
  unregister(s: Session): void;
  /** Work the host waits for before it shuts down (replies after their commit). */
  track<T>(p: Promise<T>): Promise<T>;
  /** Queues with freed permits (WorkSignals.wake). */
  wake(queueIds: Iterable<string>, cause?: WakeCause): void;
  /** The session may have free slots: due for a claim round. */
  kick(s: Session): void;
  /** Attempts claimed for this session that it will not deliver: back to WAITING now. */
  releaseUndelivered(s: Session, attemptIds: string[]): void;
}
