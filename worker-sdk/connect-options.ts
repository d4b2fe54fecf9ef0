// What opening one worker session takes (connection.ts): the options of connect(), the
// registration and its mapping to the hello frame, the gateway URL, and the shapes a session
// hands back (its events, the result a worker sends).
import type { ErrorFrame, GoawayFrame, HelloFrame, ResultFrame, TaskAssignFrame, TaskCancelFrame } from '@orbit/protocol/frames';
import { OrbitError } from '@orbit/protocol/errors';
import type { ProtocolViolation } from './errors.js';
import { outgoingProblem, type KnownAttempt } from './frame-checks.js';

export type { KnownAttempt };

export const SDK_AGENT = 'orbit-worker-sdk/0.1.0';

/** One handler name and the versions of it this session runs (hello `handlers`). */
export interface HandlerRegistration {
  handler: string;
  versions: string[];
}

/** Who this session is and what it takes (the hello frame, docs/worker-protocol.md). */
export interface Registration {
  /** Unique to this process; a second session with the same id replaces the first. */
  workerId: string;
  /** Queue ids to take tasks from (1 to 64). */
  queues: string[];
  /** Attempts the session holds at once at most (0 to 1024); 0 opens it paused. */
  capacity: number;
  /** Whether keyed tasks (with a fencing token) may be assigned. Required and explicit: declare
   * true only once the resource side verifies tokens. */
  concurrencyKeys: boolean;
  /** The handler filter: only these handlers (and versions) are assigned.
   * @default every handler of the queues */
  handlers?: HandlerRegistration[];
  /** Attempt ids held from an earlier session, to be resumed.
   * @default [] */
  resume?: string[];
  /** Free text shown in the console and in GET /v1/workers.
   * @default `orbit-worker-sdk/<version>` ({@link SDK_AGENT}) */
  agent?: string;
}

/** The options of {@link connect}: one session, no reconnect (createWorker() does that). */
export interface ConnectOptions {
  /** The gateway's base URL, `http(s)://host[:port][/prefix]` or `ws(s)://…`; the SDK appends
   * `/v1/workers/connect`. */
  url: string;
  /** The bearer token (a credential with the `worker` role on the queues). */
  token: string;
  /** Who this session is and what it takes. */
  registration: Registration;
  /** What this process already knows about attempts of earlier sessions, so that a resume or a
   * repeated assign that changes an attempt's key or token is caught as a protocol violation.
   * @default none */
  knownAttempts?: ReadonlyMap<string, KnownAttempt>;
  /** Handshake + hello.ok deadline in ms (the gateway allows 10 s for hello).
   * @default 10_000 */
  helloTimeoutMs?: number;
  /** Terminate the session when nothing (frame or ping) arrives for this long, in ms; the gateway
   * pings every 15 s. 0 disables.
   * @default 45_000 */
  idleTimeoutMs?: number;
  /** Largest incoming frame accepted, in bytes (ws closes with 1009 above it).
   * @default 4 MiB (4 × the protocol's default max_frame_bytes) */
  maxIncomingFrameBytes?: number;
}

/** @internal One entry of connection.ts's queue of events held until hello.ok's listeners exist. */
export type ConnectionEvent =
  | { type: 'task.assign'; frame: TaskAssignFrame }
  | { type: 'task.cancel'; frame: TaskCancelFrame }
  | { type: 'error'; frame: ErrorFrame }
  | { type: 'goaway'; frame: GoawayFrame }
  | { type: 'protocol_error'; error: ProtocolViolation }
  | { type: 'close'; code: number; reason: string };

/** A result as the worker sends it (the `result` frame, camelCased). */
export interface ResultInput {
  attemptId: string;
  outcome: ResultFrame['outcome'];
  output?: unknown;
  error?: { code: string; message: string };
  retryAfterMs?: number;
}

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
  const problem = outgoingProblem(hello);
  if (problem) throw new OrbitError('INVALID_ARGUMENT', `invalid registration: ${problem}`);
  return hello;
}
