// One WebSocket connection of a worker identity. Each command is answered only after its commit;
// frames about one attempt run in arrival order, about different attempts concurrently; renews are
// coalesced. What a session holds of the node is bounded: its socket pauses at its frames-in-flight
// limit (frame-window.ts), one renew transaction at a time, and its transactions take turns with
// other applications' (the host's admission). It sees the node only through its SessionHost; it
// alone changes its state, and terminate() is the one way to end it from outside.
import { isUtf8 } from 'node:buffer';
import type { RawData } from 'ws';
import type { Logger } from 'pino';
import { OrbitError, ERROR_CODES } from '@orbit/protocol/errors';
import { parseWorkerFrame, type GatewayFrame, type HelloFrame, type WorkerFrame } from '@orbit/protocol/frames';
import type { Credential } from '../db/credentials.js';
import { renewFrames, type RenewReply } from '../dispatch/renew.js';
import { coalesce, type Coalesced } from '../dispatch/coalesce.js';
import type { Assignment, ClaimSession } from '../dispatch/grant.js';
import { newId } from '../ids.js';
import { closeSessionRow, recordSessionCapacity, recordSessionDraining } from '../db/worker-sessions.js';
import { helloClaimSession, helloOk, helloTransaction } from './hello.js';
import type { WorkerSocket } from './worker-socket.js';
import { FrameWindow } from './frame-window.js';
import { isDatabaseRefusal, reportInternal } from '../boundary.js';
import type { CancelReason } from '../dispatch/revoke.js';
import { Liveness } from './liveness.js';
import type { SessionHost, SessionState } from './session-host.js';
import { SessionSlots } from './session-slots.js';
import { MAX_IDS_PER_FRAME } from '@orbit/protocol/limits';

export class Session {
  readonly id = newId();
  readonly slots = new SessionSlots(() => this.takesWork());
  private current: SessionState = 'hello';
  workerId = '';
  claim!: ClaimSession;
  readonly log: Logger;
  private readonly chains = new Map<string, Promise<void>>();
  private helloDone: Promise<void> | null = null;
  private helloTimer: NodeJS.Timeout | null = null;
  private missedPongs = 0;
  private readonly liveness: Liveness;
  /** Row updates of flow control, chained so a later capacity never lands before an earlier one. */
  private mirrorChain: Promise<void> = Promise.resolve();
  /** capacity frames so far: a row update that a newer capacity frame overtook is skipped. */
  private capacityFrames = 0;
  private readonly window: FrameWindow;
  /** Renew frames arriving while its renew transaction runs share the next, within one frame's ids. */
  private readonly renews: Coalesced<string[], RenewReply>;

  constructor(
    private readonly host: SessionHost,
    readonly ws: WorkerSocket,
    readonly cred: Credential,
  ) {
    this.log = host.log.child({ session_id: this.id });
    this.liveness = new Liveness(
      (data) => ws.ping(data),
      host.config.pongTimeoutMs,
      () => {
        host.metrics.sessionStalls.inc();
        this.log.info({ pong_timeout_ms: host.config.pongTimeoutMs }, 'ping unanswered; no new work until the worker answers');
      },
    );
    this.window = new FrameWindow(ws, { maxFrames: host.config.sessionMaxFramesInFlight, maxBytes: host.config.sessionMaxBytesInFlight }, host.metrics);
    this.renews = coalesce(
      async (_session, frames) => {
        const replies = await this.admitted(() => renewFrames(host.pool, this.claim, frames, this.slots.held));
        host.metrics.renewBatchSize.observe(frames.length);
        return replies;
      },
      { maxBatch: MAX_IDS_PER_FRAME, maxParallel: 1, weight: { of: (ids) => ids.length, max: () => MAX_IDS_PER_FRAME } },
    );
    this.helloTimer = setTimeout(
      () => this.boundary('timer', () => this.protocolError('hello not received within the time limit')),
      host.config.helloTimeoutMs,
    );
    ws.on('message', (data, isBinary) => this.boundary('frame', () => this.onMessage(data, isBinary)));
    ws.on('pong', (data) =>
      this.boundary('session', () => {
        this.missedPongs = 0;
        if (this.liveness.pong(data)) this.host.kick(this);
      }),
    );
    ws.on('close', (code) => this.boundary('session', () => this.onClose(code)));
    ws.on('error', (err) => this.log.debug({ err }, 'socket error'));
  }

  /** Every handler's error boundary: an unexpected exception ends this session (INTERNAL, 1011). */
  private boundary(where: 'frame' | 'timer' | 'session', fn: () => void): void {
    try {
      fn();
    } catch (err) {
      reportInternal(this.host, where, err, { session_id: this.id });
      if (this.state !== 'closed') this.terminate(1011, 'internal error', 'INTERNAL');
    }
  }

  get state(): SessionState {
    return this.current;
  }

  private takesWork(): boolean {
    // An attempt claimed for a closing socket would only be released again (its token burned).
    if (this.state !== 'open' || this.ws.readyState !== this.ws.OPEN) return false;
    return this.liveness.answering();
  }

  heartbeat(): void {
    if (this.missedPongs >= 2) {
      this.log.info('two pongs missed; closing');
      // No close handshake with a peer that does not answer: the socket is dropped (close 1006).
      this.ended();
      this.ws.terminate();
      return;
    }
    // While the window has paused reading, the pong waits unread behind the worker's own frames:
    // the gateway, not the worker, is slow, so it is not counted as missed.
    if (!this.window.isPaused) this.missedPongs++;
    this.liveness.ping();
  }

  /** An attempt was revoked without the worker's word: task.cancel, and unless a person cancelled
   * it (a lease ran out: the worker may have stopped), no new work until it answers a ping sent now. */
  cancelAttempt(attemptId: string, reason: CancelReason): void {
    this.send({ type: 'task.cancel', attempt_id: attemptId, reason });
    if (reason !== 'CANCELLED') this.liveness.probe(true);
    this.dropAttempt(attemptId);
  }

  send(frame: GatewayFrame): void {
    if (this.ws.readyState === this.ws.OPEN) this.window.send(JSON.stringify(frame));
  }

  /** The one way to end a session: with `error`, a fatal error frame first, then the close. Closed
   * at once; its attempts are not released (they finish on a new session or expire). */
  terminate(code: number, reason: string, error?: keyof typeof ERROR_CODES): void {
    if (this.current === 'closed') return;
    this.ended();
    if (error) this.ws.sendFatal({ type: 'error', code: error, message: reason, fatal: true });
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, reason);
  }

  private ended(): void {
    this.current = 'closed';
    this.window.close();
    if (this.helloTimer) clearTimeout(this.helloTimer);
    this.host.unregister(this);
  }

  private protocolError(message: string, closeCode = 1002): void {
    if (this.state === 'closed') return;
    this.log.info({ reason: message }, 'protocol error');
    this.terminate(closeCode, message, 'PROTOCOL_ERROR');
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.state === 'closed') return;
    if (isBinary) return this.protocolError('binary frames are not accepted', 1003);
    // Checked in the order its errors are answered: size, UTF-8, schema.
    const buf = Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]);
    const max = this.host.config.maxFrameBytes;
    // The socket accepts twice the limit, so an oversized frame still gets its error frame.
    if (buf.length > max) return this.protocolError(`frame over max_frame_bytes (${max})`, 1009);
    // ws skips UTF-8 validation, so invalid text gets its error frame and 1002, not a bare 1007.
    if (!isUtf8(buf)) return this.protocolError('text frame is not valid UTF-8');
    const parsed = parseWorkerFrame(buf.toString('utf8'));
    if (!parsed.ok) return this.protocolError(parsed.message);
    const f = parsed.frame;
    if (this.helloDone === null) {
      if (f.type !== 'hello') return this.protocolError('the first frame must be hello');
      clearTimeout(this.helloTimer!);
      const done = this.window.enter(buf.length);
      this.helloDone = this.track(this.onHello(f));
      void this.helloDone.then(done);
      return;
    }
    if (f.type === 'hello') return this.protocolError('hello may be sent only once');
    // In flight until answered (or failed): the window pauses the socket at the session's limit.
    const done = this.window.enter(buf.length);
    void this.helloDone.then(() =>
      this.boundary('frame', () => {
        if (this.state !== 'open' && this.state !== 'draining') return done();
        try {
          this.dispatchFrame(f, done);
        } catch (err) {
          done();
          throw err;
        }
      }),
    );
  }

  /** `fn` (one transaction) when this session's application has its turn at the pool. */
  private admitted<T>(fn: () => Promise<T>): Promise<T> {
    return this.host.admission(this.cred.applicationId, fn);
  }

  /** Best effort (db/worker-sessions.ts): a failed row update is logged, never fatal. `done` once
   * it ran (the frame that asked for it is in flight until then). */
  private mirror(update: () => Promise<void>, done: () => void): void {
    this.mirrorChain = this.mirrorChain.then(update).catch((err) => this.log.warn({ err }, 'session row not updated; GET /v1/workers may be stale'));
    void this.host.track(this.mirrorChain).then(done);
  }

  private track(p: Promise<void>): Promise<void> {
    return this.host.track(p.catch((err) => this.onUnexpected(err)));
  }

  private onUnexpected(err: unknown): void {
    if (err instanceof OrbitError) {
      // A documented refusal (e.g. hello NOT_FOUND for a queue) is policy, not an internal error.
      const close = ERROR_CODES[err.code].close ?? 1008;
      this.terminate(close, err.message, err.code);
      return;
    }
    if (isDatabaseRefusal(err)) {
      // Nothing of the refused transaction committed: the worker reconnects, resumes and sends
      // its frames again (a result is deduplicated by its fingerprint).
      this.log.warn({ err }, 'database unavailable or busy; closing session so the worker reconnects');
      this.terminate(ERROR_CODES.UNAVAILABLE.close, 'database unavailable or busy; reconnect and resume', 'UNAVAILABLE');
      return;
    }
    reportInternal(this.host, 'session', err, { session_id: this.id });
    this.terminate(1011, 'internal error', 'INTERNAL');
  }

  private async onHello(h: HelloFrame): Promise<void> {
    const res = await this.admitted(() => helloTransaction(this.host.pool, this.host.advanceSteps, this.cred, this.id, this.host.config.nodeId, h));
    if (this.state === 'closed') {
      await this.admitted(() => closeSessionRow(this.host.pool, this.id, 1006));
      return;
    }
    this.workerId = h.worker_id;
    this.slots.capacity = h.capacity;
    this.claim = helloClaimSession(this.cred, this.id, h);
    this.slots.resume(res.resumed);
    this.current = 'open';
    this.host.register(this);
    this.send(helloOk(this.id, h, res, this.host.config.maxFrameBytes));
    this.log.info({ worker_id: h.worker_id, resumed: res.resumed.length, lost: res.lost.length }, 'session open');
    this.host.signals.wake(res.freedQueues);
    this.host.kick(this);
  }

  /** Runs one frame; `done` once it is answered. */
  private dispatchFrame(f: Exclude<WorkerFrame, HelloFrame>, done: () => void): void {
    switch (f.type) {
      case 'start':
        return this.perAttempt(f.attempt_id, () => this.onStart(f.attempt_id), done);
      case 'result':
        return this.perAttempt(f.attempt_id, () => this.onResult(f), done);
      case 'renew':
        void this.track(this.onRenew(f.attempt_ids)).then(done);
        return;
      case 'capacity': {
        this.slots.capacity = f.capacity;
        // Only the newest capacity is written: a flood of capacity frames is one row update, not one each.
        const n = ++this.capacityFrames;
        const write = () =>
          n === this.capacityFrames ? this.admitted(() => recordSessionCapacity(this.host.pool, this.id, this.slots.capacity)) : Promise.resolve();
        this.mirror(write, done);
        this.host.kick(this);
        return;
      }
      case 'drain':
        this.current = 'draining';
        this.mirror(() => this.admitted(() => recordSessionDraining(this.host.pool, this.id)), done);
        this.send({ type: 'drain.ok' });
        return;
    }
  }

  /** Serializes work per attempt id (a result never overtakes its start). */
  private perAttempt(attemptId: string, fn: () => Promise<void>, done: () => void): void {
    const prev = this.chains.get(attemptId) ?? Promise.resolve();
    const next = prev.then(fn).catch((err) => this.attemptError(attemptId, err));
    const tracked = this.track(next);
    this.chains.set(attemptId, tracked);
    void tracked.then(() => {
      if (this.chains.get(attemptId) === tracked) this.chains.delete(attemptId);
      done();
    });
  }

  private attemptError(attemptId: string, err: unknown): void {
    if (err instanceof OrbitError && ['LEASE_LOST', 'NOT_FOUND', 'STATE_CONFLICT', 'PAYLOAD_TOO_LARGE'].includes(err.code)) {
      if (err.code === 'LEASE_LOST' || err.code === 'NOT_FOUND') this.dropAttempt(attemptId);
      this.send({ type: 'error', code: err.code, message: err.message, attempt_id: attemptId, fatal: false });
      return;
    }
    throw err;
  }

  private async onStart(attemptId: string): Promise<void> {
    const r = await this.host.frames(this.cred.applicationId, {
      kind: 'start',
      who: this.claim,
      attemptId,
      queueId: this.slots.held.get(attemptId) ?? null,
    });
    if (!r.ok) throw 'thrown' in r ? r.thrown : r.error;
    if (r.kind !== 'start') throw new Error('frame batch answered a start with a result');
    this.send({ type: 'start.ok', attempt_id: attemptId, lease_expires_at: r.leaseExpiresAt });
  }

  private async onRenew(ids: string[]): Promise<void> {
    const r = await this.renews(this.id, ids);
    for (const id of r.lost) this.dropAttempt(id);
    this.send({ type: 'renew.ok', leases: r.leases, lost: r.lost });
  }

  private async onResult(f: Extract<WorkerFrame, { type: 'result' }>): Promise<void> {
    const output = f.output === undefined ? null : JSON.stringify(f.output);
    const r = await this.host.frames(this.cred.applicationId, { kind: 'result', who: this.claim, frame: f, output });
    if (!r.ok) throw 'thrown' in r ? r.thrown : r.error;
    if (r.kind !== 'result') throw new Error('frame batch answered a result with a start');
    this.slots.drop(f.attempt_id);
    this.send(r.reply);
    // Per-task lines are debug only, and not even built below it: no per-task logging cost.
    if (this.log.isLevelEnabled('debug')) {
      this.log.debug({ attempt_id: f.attempt_id, outcome: f.outcome, task_state: r.reply.task_state, deduplicated: r.reply.deduplicated }, 'task result');
    }
    if (!r.reply.deduplicated) this.host.metrics.tasksFinished.inc({ outcome: f.outcome });
    // Freed permits, or a retried task WAITING again: the queue's sessions, this one included, are due.
    this.host.signals.wake(r.freedQueues);
    if (r.freedQueues.length === 0) this.host.kick(this);
  }

  revoked(): void {
    if (this.state === 'closed') return;
    this.log.info('credential revoked; closing session');
    this.terminate(1008, 'credential revoked', 'UNAUTHENTICATED');
  }

  dropAttempt(attemptId: string): void {
    if (this.slots.drop(attemptId)) this.host.kick(this);
  }

  deliver(assignments: Assignment[]): void {
    // After drain or close, or past a capacity lowered meanwhile, the attempts go back to WAITING
    // now instead of sitting out their lease.
    const open = this.state === 'open' && this.ws.readyState === this.ws.OPEN;
    const held = open ? this.slots.take(assignments) : [];
    if (held.length < assignments.length) {
      const undelivered = assignments.slice(held.length).map((a) => a.attemptId);
      this.host.releaseUndelivered(this, undelivered);
    }
    // A worker that stopped gets this batch, but no more: nothing new is assigned while this ping
    // stays unanswered past the pong timeout.
    if (held.length > 0) this.liveness.probe();
    const debug = this.log.isLevelEnabled('debug');
    for (const a of held) {
      if (debug) {
        this.log.debug(
          { task_id: a.task.id, attempt_id: a.attemptId, attempt_no: a.attemptNo, concurrency_token: a.concurrencyToken ?? undefined },
          'task assigned',
        );
      }
      if (this.ws.readyState === this.ws.OPEN) this.window.send(assignText(a));
    }
  }

  private onClose(code: number): void {
    const wasOpen = this.state !== 'hello' && this.helloDone !== null;
    this.ended();
    if (wasOpen) void this.host.track(this.admitted(() => closeSessionRow(this.host.pool, this.id, code)).catch(() => {}));
  }
}

/** The task.assign frame as JSON text, the stored payload spliced in without a parse. `task` is
 * the last member and never empty, so the head ends with the two braces the payload goes before. */
export function assignText(a: Assignment): string {
  const frame: Omit<Extract<GatewayFrame, { type: 'task.assign' }>, 'task'> & { task: Assignment['task'] } = {
    type: 'task.assign',
    attempt_id: a.attemptId,
    attempt_no: a.attemptNo,
    lease_expires_at: a.leaseExpiresAt,
    ...(a.concurrencyToken !== null ? { concurrency_token: a.concurrencyToken } : {}),
    task: a.task,
  };
  const head = JSON.stringify(frame);
  return `${head.slice(0, -2)},"payload":${a.payloadJson}}}`;
}
