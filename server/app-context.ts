import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Pool } from './db/pool.js';
import type { Metrics } from './metrics.js';

/** Everything a request, a session or a background loop needs; one per gateway process. */
export interface AppContext {
  config: Config;
  pool: Pool;
  log: Logger;
  metrics: Metrics;
  /** In-process signals: 'work' (queueId) after a submit or a release commits. */
  events: EventEmitter;
  /** True once SIGTERM arrived: new requests get 503. */
  shuttingDown: boolean;
}
