// The handler-facing side of the worker: the context `e` a handler receives, handler lookup,
// the logger shape and the default worker identity.
import os from 'node:os';
import { nanoid } from 'nanoid';
import type { TaskAssignFrame } from '../protocol/frames.js';

export interface Logger {
  debug?(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface TaskInfo<P = unknown> {
  id: string;
  queueId: string;
  handler: string;
  handlerVersion: string;
  payloadVersion: string;
  payload: P;
  businessKey?: string;
  concurrencyKey?: string;
  priority: number;
  deadlineAt: string;
}

export interface TaskContext<P = unknown> {
  task: TaskInfo<P>;
  attemptId: string;
  attemptNo: number;
  /** The fencing token (exact bigint) of a keyed task; undefined for an unkeyed one. Hand it to
   * the resource (see fenced-resource.ts); never convert it to a number. */
  concurrencyToken?: bigint;
  leaseExpiresAt: string;
  /** Fires on task.cancel, a lost lease, or a close() that timed out. */
  signal: AbortSignal;
  workerId: string;
}

export type HandlerFn<P = any> = (e: TaskContext<P>) => unknown;
export type HandlerSpec = HandlerFn | { versions: string[]; fn: HandlerFn };

/** The function registered for the task's handler and version, if any. */
export function handlerFor(handlers: Record<string, HandlerSpec>, f: TaskAssignFrame): HandlerFn | undefined {
const spec = Object.prototype.hasOwnProperty.call(handlers, f.task.handler) ? handlers[f.task.handler] : undefined;
  if (spec === undefined || typeof spec === 'function') return spec;
  return spec.versions.includes(f.task.handler_version) ? spec.fn : undefined;
}

/** The handler's `e`: camelCase task fields and the token as an exact bigint. */
export function taskContext(f: TaskAssignFrame, leaseExpiresAt: string, signal: AbortSignal, workerId: string): TaskContext {
  const t = f.task;
  return {
    task: {
      id: t.id,
      queueId: t.queue_id,
      handler: t.handler,
      handlerVersion: t.handler_version,
      payloadVersion: t.payload_version,
      payload: t.payload,
      businessKey: t.business_key,
      concurrencyKey: t.concurrency_key,
      priority: t.priority,
      deadlineAt: t.deadline_at,
    },
    attemptId: f.attempt_id,
    attemptNo: f.attempt_no,
    concurrencyToken: f.concurrency_token === undefined ? undefined : BigInt(f.concurrency_token),
    leaseExpiresAt,
    signal,
    workerId,
  };
}

export const consoleLogger: Logger = {
  info: () => {},
  warn: (o, m) => console.warn(m ?? '', o),
  error: (o, m) => console.error(m ?? '', o),
};

/** A fresh identity per worker: `${hostname}-${pid}-${random}`, within ^[A-Za-z0-9._:-]{1,64}$.
 * The capability flag is frozen per worker_id, so it is never reused across processes. */
export function defaultWorkerId(): string {
  const host = os.hostname().replace(/[^A-Za-z0-9._:-]/g, '-').slice(0, 32) || 'worker';
  return `${host}-${process.pid}-${nanoid(12)}`;
}
