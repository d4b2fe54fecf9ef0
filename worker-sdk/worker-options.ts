// The options and events of createWorker(), apart from worker.ts so the class stays readable.
import { OrbitError } from '@orbit/protocol/errors';
import type { HelloOkFrame } from '@orbit/protocol/frames';
import { MAX_CAPACITY } from '@orbit/protocol/limits';
import type { GatewayError, ProtocolViolation } from './errors.js';
import type { ReconnectPolicy } from './reconnect.js';
import type { HandlerMap, Logger, TaskType } from './task-context.js';

/** The options of {@link createWorker}. The worker connects as soon as it is created; `run()`
 * waits for it to stop, `ready` for its first session, `close()` drains it. */
export interface WorkerOptions<T = Record<string, TaskType>> {
  /** The gateway's base URL, `http(s)://host[:port][/prefix]` (or `ws(s)://…`); the SDK appends
   * `/v1/workers/connect`. */
  url: string;
  /** The bearer token: a credential with the `worker` role on every queue in `queues`. */
  token: string;
  /** Queue ids to take tasks from (1 to 64). */
  queues: string[];
  /** Attempts this worker runs at once at most (0 to 1024; 0 connects paused). Change it later
   * with `setCapacity()`. */
  capacity: number;
  /** Attempts this worker holds beyond `capacity`, leased and waiting (oldest first) for a
   * handler to finish: the session asks the gateway for `capacity + prefetch`, so a freed handler
   * starts the next task without waiting for a grant. A waiting attempt's lease is renewed; it
   * is started only when it is taken for running. An integer ≥ 0 with `capacity + prefetch` at
   * most 1024 (docs/worker-protocol.md, "Prefetch").
   * @default 0 */
  prefetch?: number;
  /** One handler per handler name. Only these names (and their versions) are sent to the gateway
   * as this worker's filter: tasks for other handlers are never assigned to it. */
  handlers: HandlerMap<T>;
  /** Versions a handler given as a bare function runs (a `{ versions, fn }` handler names its own).
   * @default ['v1'] */
  defaultVersions?: string[];
  /** Where the worker logs (pino and console both fit). Handlers get no logger from it.
   * @default one line per record on stderr (`time LEVEL message {fields}`); info, warn and error, no debug */
  logger?: Logger;
  /** This worker's identity; must be unique to this process (a second session with the same id
   * replaces the first).
   * @default `${hostname}-${pid}-${random}` */
  workerId?: string;
  /** Free text shown in the console and in GET /v1/workers (at most 64 characters).
   * @default `orbit-worker-sdk/<version>` */
  agent?: string;
  /** Backoff between connection attempts and when to give up.
   * @default { initialDelayMs: 100, maxDelayMs: 5000, maxAttempts: 30 } */
  reconnect?: ReconnectPolicy;
  /** Handshake + hello.ok deadline of each connection attempt, in ms.
   * @default 10_000 */
  helloTimeoutMs?: number;
  /** Drop a session (and reconnect) when nothing arrives from the gateway for this long, in ms;
   * the gateway pings every 15 s. 0 disables.
   * @default 45_000 */
  idleTimeoutMs?: number;
}

/** The events of a {@link Worker} (`worker.on(name, listener)`, typed). */
export type WorkerEvents = {
  /** A session is established (first connect and every reconnect). */
  connected: [HelloOkFrame];
  /** A session ended; the worker reconnects unless it was closed or failed. */
  disconnected: [code: number, reason: string];
  /** The gateway broke the protocol; the session is closed with 1002 and the worker reconnects. */
  protocolError: [ProtocolViolation];
  /** An error frame that answered no request of this worker. */
  gatewayError: [GatewayError];
  /** An attempt's lease is gone (task.cancel, a failed renew or resume); its signal has fired. */
  leaseLost: [attemptId: string, reason: string];
  /** The gateway answered an attempt's result, or refused it (`error` is the code), or the worker
   * stopped before it could be sent (`error` is `RESULT_NOT_SENT`: the lease runs out). */
  result: [{ attemptId: string; outcome: string; taskState?: string; deduplicated?: boolean; error?: string }];
  /** The worker stopped for good: `run()` and `ready` reject with the same error. */
  fatal: [Error];
  newListener: [event: string | symbol, listener: (...args: unknown[]) => void];
};

/** The message of a prefetch that is not an integer ≥ 0 or with capacity + prefetch over the
 * protocol's maximum; the Go SDK reports the same. */
export const PREFETCH_PROBLEM = `invalid prefetch: must be an integer >= 0 with capacity + prefetch at most ${MAX_CAPACITY}`;

/** Throws INVALID_ARGUMENT unless `prefetch` fits beside `capacity` (itself checked by hello's schema). */
export function checkPrefetch(capacity: number, prefetch: number): void {
  if (!Number.isInteger(prefetch) || prefetch < 0 || capacity + prefetch > MAX_CAPACITY) throw new OrbitError('INVALID_ARGUMENT', PREFETCH_PROBLEM);
}

/** The capacity a session declares for `capacity` handlers and `prefetch`: both, or 0 while
 * paused, so a paused worker is granted nothing new (docs/worker-protocol.md, "Prefetch"). */
export function declaredCapacity(capacity: number, prefetch: number): number {
  return capacity === 0 ? 0 : capacity + prefetch;
}
