// Types and pure checks of one worker session, shared by connection.ts and worker.ts: the
// registration → hello mapping, the SDK's protocol checks on task.assign (worker-protocol.md,
// "Worker SDK obligations"), outgoing frame validation, and an event iterator.
import { TypeCompiler } from '@sinclair/typebox/compiler';
import {
  WORKER_FRAMES,
  type ErrorFrame,
  type GoawayFrame,
  type HelloFrame,
  type ResultFrame,
  type TaskAssignFrame,
  type TaskCancelFrame,
  type WorkerFrame,
} from '@orbit/protocol/frames';
import { OrbitError } from '@orbit/protocol/errors';
import { concurrencyKeyProblem, isUint64String } from '@orbit/protocol/validation';
import type { ProtocolViolation } from './errors.js';

export const SDK_AGENT = 'orbit-worker-sdk/0.1.0';

export interface HandlerRegistration {
  handler: string;
  versions: string[];
}

export interface Registration {
  workerId: string;
  queues: string[];
  capacity: number;
  /** Required and explicit: declare it only once the resource side verifies tokens. */
  concurrencyKeys: boolean;
  handlers?: HandlerRegistration[];
  resume?: string[];
  agent?: string;
}

/** What this process already knows about an attempt (from an earlier session): used to check
 * that resume and repeated assigns keep the attempt's key and token frozen. */
export interface KnownAttempt {
  concurrencyKey?: string;
  concurrencyToken?: string;
}

export interface ConnectOptions {
  url: string;
  token: string;
  registration: Registration;
  knownAttempts?: ReadonlyMap<string, KnownAttempt>;
  /** Called synchronously for every event, from the first frame on (no event can be missed). */
  onEvent?: (ev: ConnectionEvent) => void;
  /** Handshake + hello.ok deadline (the gateway allows 10 s for hello). Default 10 000. */
  helloTimeoutMs?: number;
  /** Terminate when nothing (frame or ping) arrives for this long; the gateway pings every 15 s.
   * Default 45 000; 0 disables. */
  idleTimeoutMs?: number;
  /** Largest incoming frame accepted (ws closes with 1009 above it). Default 4 MiB. */
  maxIncomingFrameBytes?: number;
}

export type ConnectionEvent =
  | { type: 'task.assign'; frame: TaskAssignFrame }
  | { type: 'task.cancel'; frame: TaskCancelFrame }
  | { type: 'error'; frame: ErrorFrame }
  | { type: 'goaway'; frame: GoawayFrame }
  | { type: 'protocol_error'; error: ProtocolViolation }
  | { type: 'close'; code: number; reason: string };

export interface ResultInput {
  attemptId: string;
  outcome: ResultFrame['outcome'];
  output?: unknown;
  error?: { code: string; message: string };
  retryAfterMs?: number;
}

const outgoingChecks = new Map(Object.entries(WORKER_FRAMES).map(([k, s]) => [k, TypeCompiler.Compile(s)]));

/** `http(s)://host[/prefix]` → `ws(s)://host[/prefix]/v1/workers/connect`. */
export function connectUrl(base: string): string {
  const u = new URL(base);
  if (u.protocol === 'http:') u.protocol = 'ws:';
  else if (u.protocol === 'https:') u.protocol = 'wss:';
  else if (u.protocol !== 'ws:' && u.protocol !== 'wss:') throw new TypeError(`unsupported URL scheme ${u.protocol}`);
  u.pathname = u.pathname.replace(/\/+$/, '') + '/v1/workers/connect';
  u.search = '';
  return u.toString();
}

/** The hello frame for a registration; throws INVALID_ARGUMENT before any I/O when it is invalid. */
export function helloFrame(r: Registration): HelloFrame {
  if (typeof r.concurrencyKeys !== 'boolean') {
    throw new TypeError('registration.concurrencyKeys must be set explicitly to true or false');
  }
  const hello: HelloFrame = {
    type: 'hello',
    protocol: 1,
    worker_id: r.workerId,
    queues: r.queues,
    capacity: r.capacity,
    concurrency_keys: r.concurrencyKeys,
    agent: r.agent ?? SDK_AGENT,
  };
  if (r.handlers && r.handlers.length > 0) hello.handlers = r.handlers;
  if (r.resume && r.resume.length > 0) hello.resume = r.resume;
  const check = outgoingChecks.get('hello')!;
  if (!check.Check(hello)) {
    const e = check.Errors(hello).First();
    throw new OrbitError('INVALID_ARGUMENT', `invalid registration: ${e ? `${e.path} ${e.message}` : 'invalid'}`);
  }
  return hello;
}

/** The SDK's own checks on task.assign (worker-protocol.md, SDK obligations): the message of the
 * violation, or null. `prev` is what this process already knows about the attempt id. */
export function assignProblem(f: TaskAssignFrame, concurrencyKeys: boolean, prev: KnownAttempt | undefined): string | null {
  const key = f.task.concurrency_key;
  const tok = f.concurrency_token;
  if (key !== undefined && tok === undefined) return 'task.assign has a concurrency_key but no concurrency_token';
  if (key === undefined && tok !== undefined) return 'task.assign has a concurrency_token but no concurrency_key';
  if (tok !== undefined && !isTokenString(tok)) return 'concurrency_token is not a non-zero uint64 decimal';
  if (key !== undefined) {
    const p = concurrencyKeyProblem(key);
    if (p) return `concurrency_key ${p}`;
    if (!concurrencyKeys) return 'keyed task assigned to a session that did not declare concurrency_keys';
  }
  // Key and token are frozen for the attempt: a second assign that changes them is a gateway bug
  // that would hand the resource a wrong fencing token.
  if (prev && (prev.concurrencyKey !== key || prev.concurrencyToken !== tok)) {
    return 'repeated task.assign for an attempt with a different concurrency_key or concurrency_token';
  }
  return null;
}

/** A token on the wire: a uint64 decimal string that is not "0" (tokens start at 1). */
export function isTokenString(tok: string): boolean {
  return isUint64String(tok) && tok !== '0';
}

/** Validates an outgoing frame (a bad frame would cost the whole session): an error message or null. */
export function outgoingProblem(frame: WorkerFrame): string | null {
  const check = outgoingChecks.get(frame.type)!;
  if (check.Check(frame)) return null;
  const e = check.Errors(frame).First();
  return e ? `${e.path || '/'} ${e.message}` : 'invalid';
}

interface EventSource {
  on(name: 'event', l: (ev: ConnectionEvent) => void): unknown;
  off(name: 'event', l: (ev: ConnectionEvent) => void): unknown;
}

/** Async iteration over a connection's events, ending after `close`. */
export function eventIterator(emitter: EventSource, alreadyClosed: boolean): AsyncIterableIterator<ConnectionEvent> {
  const queue: ConnectionEvent[] = [];
  let wake: (() => void) | null = null;
  let done = alreadyClosed;
  const listener = (ev: ConnectionEvent) => {
    queue.push(ev);
    if (ev.type === 'close') done = true;
    wake?.();
  };
  emitter.on('event', listener);
  const it: AsyncIterableIterator<ConnectionEvent> = {
    [Symbol.asyncIterator]: () => it,
    next: async () => {
      while (queue.length === 0) {
        if (done) {
          emitter.off('event', listener);
          return { done: true, value: undefined };
        }
        await new Promise<void>((r) => (wake = r));
        wake = null;
      }
      return { done: false, value: queue.shift()! };
    },
    return: async () => {
      done = true;
      emitter.off('event', listener);
      return { done: true, value: undefined };
    },
  };
  return it;
}
