// The handler-facing side of the worker: the context `e` a handler receives, handler lookup,
// the logger shape and the default worker identity.
import os from 'node:os';
import { nanoid } from 'nanoid';
import type { TaskAssignFrame } from '@orbit/protocol/frames';

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
  /** A workflow step's task (docs/workflows.md): its run, step and, for a for_each element, index.
   * Undefined on other tasks. See stepHandler (step-handler.ts) for its payload. */
  workflow?: { runId: string; step: string; index?: number };
}

/* eslint-disable @typescript-eslint/no-explicit-any -- the SDK's public typing: a worker without a
   task map gets `any` payloads (HandlerMap), so plain JavaScript-style handlers compile. */
/** A handler: its return value is the task's output (`succeeded`); what it throws decides the
 * outcome (errors.ts). */
export type HandlerFn<P = any, O = unknown> = (e: TaskContext<P>) => O | Promise<O>;
/** A handler that names the handler versions it runs (sent to the gateway as the filter). */
export interface VersionedHandler<P = any, O = unknown> {
  versions: string[];
  fn: HandlerFn<P, O>;
}
export type Handler<P = any, O = unknown> = HandlerFn<P, O> | VersionedHandler<P, O>;
/** @deprecated the old name of Handler. */
export type HandlerSpec<P = any, O = unknown> = Handler<P, O>;

/** Payload and output of one handler name, for typing a worker:
 * `createWorker<{ 'object.update': { payload: { object_ref: string }; output: { ok: boolean } } }>(…)`. */
export interface TaskType {
  payload?: unknown;
  output?: unknown;
}
type PayloadOf<X> = X extends { payload: infer P } ? P : any;
type OutputOf<X> = X extends { output: infer O } ? O : unknown;
/** The handlers of a worker: one per handler name of `T`, each typed by that name's payload and
 * output. Without `T` the names are free and payloads are `any`. */
export type HandlerMap<T = Record<string, TaskType>> = string extends keyof T
  ? Record<string, Handler<any, unknown>>
  : { [K in keyof T]: Handler<PayloadOf<T[K]>, OutputOf<T[K]>> };
/* eslint-enable @typescript-eslint/no-explicit-any */

/** The versions a bare function handles unless the worker says otherwise. */
export const DEFAULT_HANDLER_VERSIONS = ['v1'];

/** The hello filter: every handler with its versions (a bare function: `defaultVersions`). The
 * gateway assigns nothing else to this worker, so a task for a handler it does not have waits for
 * a worker that has it instead of failing here. */
export function handlerFilter(handlers: Record<string, Handler>, defaultVersions: string[]): { handler: string; versions: string[] }[] {
  return Object.entries(handlers).map(([handler, s]) => ({ handler, versions: typeof s === 'function' ? [...defaultVersions] : [...s.versions] }));
}

/** The function registered for the task's handler and version, if any. */
export function handlerFor(handlers: Record<string, Handler>, f: TaskAssignFrame, defaultVersions: string[]): HandlerFn | undefined {
  const spec = Object.prototype.hasOwnProperty.call(handlers, f.task.handler) ? handlers[f.task.handler] : undefined;
  if (spec === undefined) return undefined;
  const versions = typeof spec === 'function' ? defaultVersions : spec.versions;
  if (!versions.includes(f.task.handler_version)) return undefined;
  return typeof spec === 'function' ? spec : spec.fn;
}

/** The handler's `e`: camelCase task fields and the token as an exact bigint. `signal` is read
 * through `signalOf` on first use (held-attempts.ts makes the AbortController then). */
export function taskContext(f: TaskAssignFrame, leaseExpiresAt: string, signalOf: () => AbortSignal, workerId: string): TaskContext {
  const t = f.task;
  const e: TaskContext = {
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
    get signal() {
      return signalOf();
    },
    workerId,
  };
  if (t.workflow) {
    e.workflow = { runId: t.workflow.run_id, step: t.workflow.step };
    if (t.workflow.index !== undefined) e.workflow.index = t.workflow.index;
  }
  return e;
}

/** The default logger: one line per record on stderr (`time LEVEL message {fields}`), so a
 * supervisor's log collector never splits a record. */
function line(level: string) {
  return (o: object, m?: string) => {
    let fields = '';
    try {
      fields = JSON.stringify(o, (_k, v) => (typeof v === 'bigint' ? v.toString() : v instanceof Error ? v.message : v));
    } catch {
      fields = '{}';
    }
    process.stderr.write(`${new Date().toISOString()} ${level} ${m ?? ''} ${fields}\n`);
  };
}
export const consoleLogger: Logger = { info: line('INFO'), warn: line('WARN'), error: line('ERROR') };

/** A fresh identity per worker: `${hostname}-${pid}-${random}`, within ^[A-Za-z0-9._:-]{1,64}$.
 * The capability flag is frozen per worker_id, so it is never reused across processes. */
export function defaultWorkerId(): string {
  const host =
    os
      .hostname()
      .replace(/[^A-Za-z0-9._:-]/g, '-')
      .slice(0, 32) || 'worker';
  return `${host}-${process.pid}-${nanoid(12)}`;
}
