// The options and events of createWorker(), apart from worker.ts so the class stays readable.
import type { HelloOkFrame } from '@orbit/protocol/frames';
import type { GatewayError, ProtocolViolation } from './errors.js';
import type { ReconnectPolicy } from './reconnect.js';
import type { HandlerMap, Logger, TaskType } from './task-context.js';

export interface WorkerOptions<T = Record<string, TaskType>> {
  url: string;
  token: string;
  queues: string[];
  capacity: number;
  /** One handler per handler name. Only these names (and their versions) are sent to the gateway
   * as this worker's filter: tasks for other handlers are never assigned to it. */
  handlers: HandlerMap<T>;
  /** Versions a handler given as a bare function runs (default `['v1']`). */
  defaultVersions?: string[];
  logger?: Logger;
  /** Default `${hostname}-${pid}-${random}`; must be unique to this process. */
  workerId?: string;
  agent?: string;
  reconnect?: ReconnectPolicy;
  helloTimeoutMs?: number;
  idleTimeoutMs?: number;
  /** Connect at once (default true); otherwise call start(). */
  autoStart?: boolean;
}

export type WorkerEvents = {
  connected: [HelloOkFrame];
  disconnected: [code: number, reason: string];
  protocolError: [ProtocolViolation];
  gatewayError: [GatewayError];
  leaseLost: [attemptId: string, reason: string];
  result: [{ attemptId: string; outcome: string; taskState?: string; deduplicated?: boolean; error?: string }];
  fatal: [Error];
  newListener: [event: string | symbol, listener: (...args: unknown[]) => void];
};
