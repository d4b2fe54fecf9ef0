import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Pool } from './db/pool.js';
import type { Metrics } from './metrics.js';
import type { WorkSignalSource, WorkSignals } from './work-signals.js';
import type { TaskSubmitter } from './dispatch/submit.js';
import type { InTransaction } from './dispatch/coalesce-tx.js';
import type { StepAdvancer } from './dispatch/ledger.js';

/** Everything a request or a background loop needs; one per gateway process. Nothing here names
 * the worker gateway: commands reach local sessions through `signals` only. */
export interface AppContext {
  config: Config;
  pool: Pool;
  log: Logger;
  metrics: Metrics;
  /** The one way to tell this node's loops about a commit, and for them to hear of it. */
  signals: WorkSignals & WorkSignalSource;
  /** The one task-creation path (submit, batch submit, schedule fires). */
  submitter?: TaskSubmitter;
  /** Where receipt-bearing HTTP commands run their transaction. */
  commandTx: InTransaction;
  /** Advances the workflow runs whose step tasks a transaction changed, before its ledger writes
   * (server/workflows/apply.ts advanceRunsInTx). */
  advanceSteps: StepAdvancer;
  /** Set on SIGTERM: new requests get 503. */
  shuttingDown: boolean;
}
