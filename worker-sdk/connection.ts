// Low-level worker connection: one WebSocket session with the gateway (docs/worker-protocol.md).
// It validates every incoming frame (protocol/frames.ts) plus the checks the SDK owes the
// resource side (token/key consistency), correlates replies with requests, and surfaces the
// rest as events. It never reconnects and never runs handlers: that is worker.ts's job.
import { EventEmitter } from 'node:events';
import WebSocket from 'ws';
import {
  DEFAULT_MAX_FRAME_BYTES,
  SUBPROTOCOL,
  parseGatewayFrame,
  type ErrorFrame,
  type GatewayFrame,
  type GoawayFrame,
  type HelloOkFrame,
  type RenewOkFrame,
  type ResultFrame,
  type ResultOkFrame,
  type StartOkFrame,
  type TaskAssignFrame,
  type TaskCancelFrame,
  type WorkerFrame,
} from '@orbit/protocol/frames';
import { OrbitError } from '@orbit/protocol/errors';
import { ID_RE } from '@orbit/protocol/ids';
import { BatchedSocket } from './batched-socket.js';
import { connectUrl, helloFrame, type ConnectOptions, type ConnectionEvent, type Registration, type ResultInput } from './connect-options.js';
import { ConnectionClosedError, GatewayError, LeaseLostError, ProtocolViolation, describeError } from './errors.js';
import { assignProblem, capacityProblem, helloOkProblem, outgoingProblem, type KnownAttempt } from './frame-checks.js';
import { readHandshakeRefusal } from './handshake-refusal.js';
import { IdleWatch } from './idle-watch.js';
import { PendingReplies } from './pending-replies.js';

export { SDK_AGENT, connectUrl, helloFrame } from './connect-options.js';
export type { ConnectOptions, HandlerRegistration, KnownAttempt, Registration, ResultInput } from './connect-options.js';

/** Attempt ids remembered for the repeated-assign check; oldest forgotten beyond this. */
const SEEN_LIMIT = 100_000;

/** The events of one session, in the order the gateway sent them. A frame that came with
 * hello.ok (same TCP read) is emitted one macrotask after `opened` resolves, so listeners attached
 * right after `await connect()` miss nothing. */
export type ConnectionEvents = {
  assign: [TaskAssignFrame];
  cancel: [TaskCancelFrame];
  /** An error frame that answers no pending request (e.g. about an attempt no longer held). */
  gatewayError: [ErrorFrame];
  goaway: [GoawayFrame];
  /** The gateway broke the protocol; the session is closing with 1002 (or 1003). */
  protocolError: [ProtocolViolation];
  close: [code: number, reason: string];
};

type Waiter<T> = { resolve: (v: T) => void; reject: (e: Error) => void };

/** Opens a session: handshake
, `hello`, and resolves with the connection once `hello.ok` came. */
export function connect(opts: ConnectOptions): Promise<WorkerConnection> {
  try {
    return new WorkerConnection(opts).opened;
  } catch (err) {
    // A bad registration is a rejection like any other failure (the constructor throws Errors only).
    return Promise.reject(err as Error);
  }
}

export class WorkerConnection extends EventEmitter<ConnectionEvents> {
  readonly registration: Registration;
  /** Set once hello.ok arrived. */
  hello!: HelloOkFrame;
  /** Resolves with this connection on hello.ok; rejects on refusal, violation or close. */
  readonly opened: Promise<WorkerConnection>;
  closeCode?: number;
  closeReason?: string;

  private readonly ws: WebSocket;
  private state: 'hello' | 'open' | 'closed' = 'hello';
  private dead = false; // a violation or close happened: ignore every later frame
  private failure?: Error; // why the session ended, handed to waiting requests
  private settleOpen!: { resolve: (c: WorkerConnection) => void; reject: (e: Error) => void };
  private readonly seen = new Map<string, KnownAttempt>();
  /** The gateway's count of the attempts this session holds (assigned or resumed, not yet
   * answered by result.ok, cancelled, lost or refused), and the largest capacity the session
   * declared: an assign of a new attempt beyond it is refused (docs/worker-protocol.md, "What an
   * SDK must refuse"). */
  private readonly sessionHeld = new Set<string>();
  private maxCapacity: number;
  private readonly pending = new PendingReplies();
  private readonly renews: Waiter<RenewOkFrame>[] = [];
  private readonly drains: Waiter<void>[] = [];
  private readonly closed: Promise<void>;
  private held: ConnectionEvent[] | null = []; // events held until the opener had a chance to listen
  private helloTimer?: NodeJS.Timeout;
  private readonly idle?: IdleWatch;

  constructor(opts: ConnectOptions) {
    super();
    this.registration = opts.registration;
    this.maxCapacity = opts.registration.capacity;
    const idleMs = opts.idleTimeoutMs ?? 45_000;
    if (idleMs > 0) {
      this.idle = new IdleWatch(idleMs, () => {
        this.failure ??= new ConnectionClosedError(1006, 'idle timeout: no frame or ping from the gateway');
        this.ws.terminate();
      });
    }
    for (const [id, k] of opts.knownAttempts ?? []) this.seen.set(id, { ...k });
    this.opened = new Promise((resolve, reject) => (this.settleOpen = { resolve, reject }));
    this.opened.catch(() => {}); // callers of connect() see it; a bare `new` must not crash
    const hello = helloFrame(opts.registration); // throws on a bad registration, before any I/O
    const helloMs = opts.helloTimeoutMs ?? 10_000;
    this.ws = new BatchedSocket(connectUrl(opts.url), SUBPROTOCOL, {
      headers: { Authorization: `Bearer ${opts.token}` },
      handshakeTimeout: helloMs,
      maxPayload: opts.maxIncomingFrameBytes ?? 4 * DEFAULT_MAX_FRAME_BYTES,
    });
    this.closed = new Promise((resolve) => this.ws.once('close', () => resolve()));
    this.helloTimer = setTimeout(() => this.fail(new GatewayError('UNAVAILABLE', 'no hello.ok in time', { fatal: true }), 1001), helloMs);
    this.ws.on('unexpected-response', (_req, res) => readHandshakeRefusal(res, (err) => this.fail(err, 1006)));
    this.ws.on('error', (err) => (this.failure ??= err));
    this.ws.on('open', () => {
      this.touch();
      this.sendFrame(hello);
    });
    this.ws.on('ping', () => this.touch());
    this.ws.on('message', (data, isBinary) => this.onMessage(data as Buffer, isBinary));
    this.ws.on('close', (code, reason) => this.onClose(code, reason.toString('utf8')));
  }

  get isOpen(): boolean {
    return this.state === 'open' && !this.dead && this.ws.readyState === WebSocket.OPEN;
  }

  /** Resolves once the socket is closed (whoever closed it). */
  get whenClosed(): Promise<void> {
    return this.closed;
  }

  // ---- requests -------------------------------------------------------------------------------

  /** Confirms the right to execute. Rejects with LeaseLostError on LEASE_LOST. */
  start(attemptId: string): Promise<StartOkFrame> {
    // Its one field checked here and the frame written as text: an id (ID_RE) needs no JSON
    // escaping, so sendFrame's schema check and JSON.stringify would add nothing but CPU.
    if (this.state === 'open' && !ID_RE.test(attemptId)) {
      return Promise.reject(new OrbitError('INVALID_ARGUMENT', 'invalid start frame: /attempt_id must be an id (32 lowercase hex characters)'));
    }
    return this.request('start', attemptId, `{"type":"start","attempt_id":"${attemptId}"}`);
  }

  /** Sends a result. Resolves with result.ok (deduplicated on a re-send); rejects with
   * LeaseLostError or GatewayError (e.g. STATE_CONFLICT for a different earlier result). */
  result(r: ResultInput): Promise<ResultOkFrame> {
    const frame: ResultFrame = { type: 'result', attempt_id: r.attemptId, outcome: r.outcome };
    if (r.output !== undefined) frame.output = r.output;
    if (r.error !== undefined) frame.error = r.error;
    if (r.retryAfterMs !== undefined) frame.retry_after_ms = r.retryAfterMs;
    return this.request('result', r.attemptId, frame);
  }

  /** Renews the leases of the given attempts; replies are matched in order. */
  renew(attemptIds: string[]): Promise<RenewOkFrame> {
    return this.enqueue(this.renews, { type: 'renew', attempt_ids: attemptIds });
  }

  /** Changes intake (0 pauses it). No reply. */
  capacity(n: number): void {
    const problem = outgoingProblem({ type: 'capacity', capacity: n });
    if (problem) throw new OrbitError('INVALID_ARGUMENT', `invalid capacity frame: ${problem}`);
    // Raised before it is sent: the gateway may assign up to n as soon as it reads it. A lower
    // capacity does not lower the bound: assigns granted before the gateway read it may follow.
    this.maxCapacity = Math.max(this.maxCapacity, n);
    this.sendFrame({ type: 'capacity', capacity: n });
  }

  /** Asks the gateway to stop assigning; resolves on drain.ok. */
  drain(): Promise<void> {
    return this.enqueue(this.drains, { type: 'drain' });
  }

  /** Closes the socket (default 1000) and resolves once it is closed. */
  close(code = 1000, reason = ''): Promise<void> {
    if (this.state !== 'closed') {
      this.dead = true;
      try {
        this.ws.close(code, reason);
      } catch {
        this.ws.terminate();
      }
      setTimeout(() => this.ws.terminate(), 5000).unref();
    }
    return this.closed;
  }

  // ---- outgoing -------------------------------------------------------------------------------

  /** Validates an outgoing frame (a bad frame would cost the whole session) and sends it. */
  private sendFrame(frame: WorkerFrame): void {
    const problem = outgoingProblem(frame);
    if (problem) throw new OrbitError('INVALID_ARGUMENT', `invalid ${frame.type} frame: ${problem}`);
    const text = JSON.stringify(frame);
    const limit = this.hello?.max_frame_bytes ?? DEFAULT_MAX_FRAME_BYTES;
    if (Buffer.byteLength(text) > limit) throw new OrbitError('PAYLOAD_TOO_LARGE', `${frame.type} frame exceeds max_frame_bytes (${limit})`);
    this.sendText(text);
  }

  /** Sends a frame's text that is known valid and small (start). */
  private sendText(text: string): void {
    if (this.dead || this.ws.readyState !== WebSocket.OPEN) throw this.closedError();
    this.ws.send(text);
  }

  private request<T extends StartOkFrame | ResultOkFrame>(kind: 'start' | 'result', attemptId: string, frame: WorkerFrame | string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.state !== 'open') return reject(this.closedError());
      // Either throws synchronously → rejects this promise.
      if (typeof frame === 'string') this.sendText(frame);
      else this.sendFrame(frame);
      // settle() hands a start entry the start.ok frame and a result entry the result.ok frame,
      // which is what the caller named as T.
      this.pending.add(attemptId, kind, resolve as (f: StartOkFrame | ResultOkFrame) => void, reject);
    });
  }

  private enqueue<T>(list: Waiter<T>[], frame: WorkerFrame): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.state !== 'open') return reject(this.closedError());
      this.sendFrame(frame);
      list.push({ resolve, reject });
    });
  }

  private closedError(): Error {
    return this.failure instanceof ProtocolViolation || this.failure instanceof GatewayError
      ? this.failure
      : new ConnectionClosedError(this.closeCode ?? 1006, this.closeReason ?? 'not open');
  }

  // ---- incoming -------------------------------------------------------------------------------

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (this.dead) return;
    this.touch();
    if (isBinary) return this.violate(new ProtocolViolation('binary frame', { closeCode: 1003 }));
    const parsed = parseGatewayFrame(data.toString('utf8'));
    if (!parsed.ok) return this.violate(new ProtocolViolation(parsed.message));
    const f = parsed.frame;
    if (this.state === 'hello') return this.onHelloReply(f);
    switch (f.type) {
      case 'hello.ok':
        return this.violate(new ProtocolViolation('hello.ok after the session was established'));
      case 'task.assign': {
        const problem = assignProblem(f, this.registration.concurrencyKeys, this.seen.get(f.attempt_id));
        if (problem) return this.violate(new ProtocolViolation(problem, { attemptId: f.attempt_id }));
        if (!this.sessionHeld.has(f.attempt_id)) {
          // A repeated assign of a held attempt is accepted (the protocol allows it); a new one
          // beyond the declared capacity would start handlers without bound.
          if (this.sessionHeld.size >= this.maxCapacity) {
            return this.violate(new ProtocolViolation(capacityProblem(this.sessionHeld.size, this.maxCapacity), { attemptId: f.attempt_id }));
          }
          this.sessionHeld.add(f.attempt_id);
        }
        this.remember(f.attempt_id, { concurrencyKey: f.task.concurrency_key, concurrencyToken: f.concurrency_token });
        return this.deliver({ type: 'task.assign', frame: f });
      }
      case 'start.ok':
        return this.pending.settle(f.attempt_id, 'start', f);
      case 'result.ok':
        // Released before the frame is handed on, so an assign that follows it finds the slot free.
        this.sessionHeld.delete(f.attempt_id);
        return this.pending.settle(f.attempt_id, 'result', f);
      case 'renew.ok':
        for (const id of f.lost) this.sessionHeld.delete(id);
        return void this.renews.shift()?.resolve(f); // replies come in request order
      case 'drain.ok':
        return void this.drains.shift()?.resolve();
      case 'task.cancel':
        this.sessionHeld.delete(f.attempt_id);
        return this.deliver({ type: 'task.cancel', frame: f });
      case 'goaway':
        return this.deliver({ type: 'goaway', frame: f });
      case 'error':
        return this.onErrorFrame(f);
    }
  }

  private onHelloReply(f: GatewayFrame): void {
    if (f.type === 'error') {
      const err = new GatewayError(f.code, f.message, { fatal: f.fatal });
      this.failure = err;
      this.settleOpen.reject(err);
      if (!f.fatal) void this.close(1002, 'error before hello.ok');
      return;
    }
    if (f.type !== 'hello.ok') return this.violate(new ProtocolViolation(`${f.type} before hello.ok`));
    const problem = helloOkProblem(f, this.registration.workerId, this.seen);
    if (problem) return this.violate(new ProtocolViolation(problem.message, { attemptId: problem.attemptId }));
    clearTimeout(this.helloTimer);
    this.hello = f;
    for (const r of f.resumed) this.sessionHeld.add(r.attempt_id);
    this.state = 'open';
    this.settleOpen.resolve(this);
    // Frames that arrived with hello.ok (same TCP read) are held one macrotask so that whoever
    // awaited connect() can attach listeners first.
    setImmediate(() => this.flushHeld());
  }

  private flushHeld(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const ev of held) this.emitEvent(ev);
  }

  private remember(id: string, k: KnownAttempt): void {
    this.seen.delete(id);
    this.seen.set(id, k);
    if (this.seen.size > SEEN_LIMIT) this.seen.delete(this.seen.keys().next().value!);
  }

  private onErrorFrame(f: ErrorFrame): void {
    // Not (or no longer) this session's attempt: the gateway no longer counts it after LEASE_LOST
    // or NOT_FOUND. It still does after STATE_CONFLICT; dropping it here too can only make this
    // count lower than the gateway's (a looser bound, never a false refusal).
    if (f.attempt_id !== undefined && (f.code === 'LEASE_LOST' || f.code === 'NOT_FOUND' || f.code === 'STATE_CONFLICT')) this.sessionHeld.delete(f.attempt_id);
    // Errors about one attempt answer the oldest request for it (the gateway answers in order).
    const answered =
      f.attempt_id !== undefined &&
      this.pending.rejectOldest(f.attempt_id, () =>
        f.code === 'LEASE_LOST'
          ? new LeaseLostError(f.attempt_id!, 'LEASE_LOST', f.message)
          : new GatewayError(f.code, f.message, { fatal: f.fatal, attemptId: f.attempt_id }),
      );
    if (!answered) {
      this.deliver({ type: 'error', frame: f });
    }
    if (f.fatal) {
      this.failure = new GatewayError(f.code, f.message, { fatal: true, attemptId: f.attempt_id });
      setTimeout(() => this.ws.terminate(), 5000).unref(); // a fatal error is followed by close
    }
  }

  private violate(v: ProtocolViolation): void {
    if (this.dead) return;
    this.failure = v;
    this.dead = true;
    this.settleOpen.reject(v);
    this.deliver({ type: 'protocol_error', error: v });
    // Close reasons are limited to 123 bytes.
    this.ws.close(
      v.closeCode,
      Buffer.from(v.message)
        .subarray(0, 120)
        .toString('utf8')
        .replace(/\uFFFD$/, ''),
    );
    setTimeout(() => this.ws.terminate(), 5000).unref();
  }

  private fail(err: Error, code: number): void {
    if (this.state === 'closed') return;
    this.failure ??= err;
    this.settleOpen.reject(err);
    this.dead = true;
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(code, err.message.slice(0, 100));
    else this.ws.terminate();
  }

  private touch(): void {
    if (this.state !== 'closed') this.idle?.touch();
  }

  private onClose(code: number, reason: string): void {
    if (this.state === 'closed') return;
    if (this.state === 'hello') setImmediate(() => this.flushHeld()); // never opened: flush now
    this.state = 'closed';
    this.dead = true;
    this.closeCode = code;
    this.closeReason = reason;
    clearTimeout(this.helloTimer);
    this.idle?.stop();
    const err =
      this.failure instanceof ProtocolViolation || this.failure instanceof GatewayError
        ? this.failure
        : new ConnectionClosedError(code, reason || (this.failure ? describeError(this.failure) : ''));
    this.settleOpen.reject(err);
    this.pending.rejectAll(err);
    for (const w of this.renews.splice(0)) w.reject(err);
    for (const w of this.drains.splice(0)) w.reject(err);
    this.deliver({ type: 'close', code, reason });
  }

  private deliver(ev: ConnectionEvent): void {
    if (this.held) this.held.push(ev);
    else this.emitEvent(ev);
  }

  private emitEvent(ev: ConnectionEvent): void {
    switch (ev.type) {
      case 'task.assign':
        return void this.emit('assign', ev.frame);
      case 'task.cancel':
        return void this.emit('cancel', ev.frame);
      case 'error':
        return void this.emit('gatewayError', ev.frame);
      case 'goaway':
        return void this.emit('goaway', ev.frame);
      case 'protocol_error':
        return void this.emit('protocolError', ev.error);
      case 'close':
        return void this.emit('close', ev.code, ev.reason);
    }
  }
}
