import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Pool } from './db/pool.js';
import type { Metrics } from './metrics.js';
import type { Faults } from './faults.js';

/** Everything a request, a session or a background loop needs; one per gateway process. */
export interface AppContext {
  config: Config;
  pool: Pool;
  log: Logger;
  metrics: Metrics;
  /** In-process signals: 'work' (queueId) after a submit or a release commits. */
  events: EventEmitter;
  /** The node's worker gateway (set once started): HTTP commands use it to notify local sessions. */
  gateway?: import('./gateway/ws-gateway.js').Gateway;
  /** The one task-creation path (submit, batch submit, schedule fires). */
  submitter?: import('./dispatch/submit.js').TaskSubmitter;
  /** Coalesces receipt-bearing HTTP commands of this node into shared transactions. */
  commandBatcher?: import('./dispatch/tx-batcher.js').TxBatcher;
  /** Test-only fault injection (ORBIT_FAULT_INJECTION=1); inert otherwise. */
  faults: Faults;
  /** True once SIGTERM arrived: new requests get 503. */
  shuttingDown: boolean;
}
