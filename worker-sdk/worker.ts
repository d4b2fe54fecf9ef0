// High-level worker (docs/worker-protocol.md, "What an SDK must do"): one worker identity per
// createWorker() call, a connection kept alive with backoff + resume, periodic renewal and a
// draining close(). Each assigned attempt runs in attempt-runner.ts (start before the handler,
// result re-sent until acknowledged); held-attempts.ts keeps what the worker holds.
import { EventEmitter } from 'node:events';
import { WorkerConnection, helloFrame, type Registration } from './connection.js';
import { OrbitError } from '@orbit/protocol/errors';
import { ConnectionClosedError, GatewayError, describeError } from './errors.js';
import { outgoingProblem } from './frame-checks.js';
import { runAttempt, type AttemptHost } from './attempt-runner.js';
import { HeldAttempts } from './held-attempts.js';
import { backoffMs, isFatalConnectError, reconnectLimit } from './reconnect.js';
import { checkPrefetch, declaredCapacity, type WorkerEvents, type WorkerOptions } from './worker-options.js';
import { DEFAULT_HANDLER_VERSIONS, consoleLogger, defaultWorkerId, handlerFilter, type Handler, type Logger, type TaskType } from './task-context.js';

export * from './task-context.js';
export type { ReconnectPolicy } from './reconnect.js';
export type { WorkerEvents, WorkerOptions } from './worker-options.js';

const STABLE_SESSION_MS = 10_000; // a session this long resets the backoff
const DRAIN_ACK_MS = 10_000;

/** Creates a worker and starts connecting at once (the one way to start one, as BullMQ's Worker
 * does by default): nothing is emitted before the caller's synchronous code after this call has
 * run, so listeners attached right away miss nothing. `await worker.run()` then waits for it to
 * stop; `close()` drains it. Invalid options throw here, before any I/O. */
export function createWorker<T = Record<string, TaskType>>(opts: WorkerOptions<NoInfer<T>>): Worker {
  return new Worker(opts);
}

export class Worker extends EventEmitter<WorkerEvents> {
  readonly workerId: string;
  private readonly readyP: Promise<void>;
  private readonly finished: Promise<void>;
  private settleFinished!: { resolve: () => void; reject: (e: Error) => void };
  /** Someone will see a fatal error (run(), ready or a 'fatal' listener). */
  private observed = false;
  // Untyped inside: createWorker<T> checked the handlers against T; they are read as Record<string, Handler>.
  private readonly opts: WorkerOptions<unknown>;
  private readonly log: Logger;
  private readonly handlerVersions?: Registration['handlers'];
  private capacity: number;
  private readonly prefetch: number;
  /** The run limit while paused: attempts granted before the pause still run (docs/worker-protocol.md, "Prefetch"). */
  private lastCapacity: number;
  private state: 'idle' | 'running' | 'draining' | 'closed' | 'failed' = 'idle';
  private conn?: WorkerConnection; // the current open session
  private pendingConn?: WorkerConnection; // a session being opened
  private readonly held: HeldAttempts;
  /** What each assigned attempt is run with (attempt-runner.ts). */
  private readonly attempts: AttemptHost;
  private waiters: ((c: WorkerConnection | null) => void)[] = [];
  private settleReady!: { resolve: () => void; reject: (e: Error) => void };
  private renewTimer?: NodeJS.Timeout;
  private wakeLoop?: () => void;
  private loop?: Promise<void>;
  private closing?: Promise<void>;

  /** Prefer createWorker(), which types the handler map; both start the worker at once. */
  constructor(opts: WorkerOptions<unknown>) {
    super();
    this.opts = opts;
    this.log = opts.logger ?? consoleLogger;
    this.workerId = opts.workerId ?? defaultWorkerId();
    this.capacity = opts.capacity;
    this.prefetch = opts.prefetch ?? 0;
    // At least 1: an attempt granted to a worker that connected paused still runs (none should come).
    this.lastCapacity = Math.max(1, opts.capacity);
    this.held = new HeldAttempts(
      this.log,
      this.workerId,
      (id, reason) => this.emit('leaseLost', id, reason),
      () => (this.capacity > 0 ? this.capacity : this.lastCapacity),
      (h) => runAttempt(this.attempts, h),
    );
    const handlers = opts.handlers as Record<string, Handler>;
    const defaultVersions = opts.defaultVersions ?? DEFAULT_HANDLER_VERSIONS;
    if (Object.keys(handlers).length === 0) throw new TypeError('createWorker: at least one handler is required');
    this.handlerVersions = handlerFilter(handlers, defaultVersions);
    this.attempts = {
      workerId: this.workerId,
      log: this.log,
      held: this.held,
      handlers,
      defaultVersions,
      session: () => this.session(),
      openSession: () => this.openSession(),
      answered: (r) => this.emit('result', r),
    };
    reconnectLimit(opts.reconnect); // validate now, like the registration
    // Validate now: a bad option must fail at construction (capacity alone first, then beside prefetch).
    helloFrame({ ...this.registration([]), capacity: opts.capacity });
    checkPrefetch(opts.capacity, this.prefetch);
    this.readyP = new Promise((resolve, reject) => (this.settleReady = { resolve, reject }));
    this.readyP.catch(() => {});
    this.finished = new Promise((resolve, reject) => (this.settleFinished = { resolve, reject }));
    this.finished.catch(() => {});
    this.on('newListener', (ev: string | symbol) => {
      if (ev === 'fatal') this.observed = true;
    });
    this.connect();
  }

  /** Resolves on the first hello.ok; rejects if the worker stops before that (a fatal error or
   * close()). For code that must know the worker is connected (tests, a readiness probe). */
  get ready(): Promise<void> {
    this.observed = true;
    return this.readyP;
  }

  /** Waits for the worker to stop: resolves after close() has drained it, rejects with the error
   * that stopped it (refused credential, retired queue, reconnect attempts exhausted, …).
   * `await worker.run()` in a main function makes the process exit non-zero on such an error.
   * The worker runs from createWorker() on; run() starts nothing. */
  run(): Promise<void> {
    this.observed = true;
    return this.finished;
  }

  /** Starts the connection loop, once (from the constructor). */
  private connect(): void {
    if (this.state === 'idle') {
      this.state = 'running';
      this.loop = this.connectionLoop();
    }
  }

  /** Attempts this worker holds right now (waiting, starting, running or reporting). */
  get inFlight(): number {
    return this.held.size;
  }

  get connected(): boolean {
    return this.conn?.isOpen ?? false;
  }

  /** Changes how many attempts run at once (0 pauses intake). The gateway is asked for
   * `n + prefetch`, or 0 when `n` is 0: a paused worker takes nothing new and still runs the
   * attempts it was granted, at its last non-zero capacity. */
  setCapacity(n: number): void {
    const problem = outgoingProblem({ type: 'capacity', capacity: n });
    if (problem) throw new OrbitError('INVALID_ARGUMENT', `invalid capacity frame: ${problem}`);
    checkPrefetch(n, this.prefetch);
    this.capacity = n;
    if (n > 0) this.lastCapacity = n;
    if (this.state === 'running' && this.conn?.isOpen) this.conn.capacity(this.declaredCapacity());
    this.held.pump();
  }

  /** The capacity the session declares: handlers plus prefetch, none while paused or draining. */
  private declaredCapacity(): number {
    return this.state === 'draining' ? 0 : declaredCapacity(this.capacity, this.prefetch);
  }

  /** Drains: asks for no more work, waits for in-flight handlers and their result.ok, then
   * closes with 1000. After `timeoutMs` the waiting attempts are dropped unstarted and the
   * handlers' signal aborted; the results of those that return within about 2 s (and results in
   * flight) are still sent on the open session before the close. What is unfinished then is left
   * to its lease's expiry (a result that could not be sent: `result` event with
   * `error: 'RESULT_NOT_SENT'`). */
  close(opts: { timeoutMs?: number } = {}): Promise<void> {
    this.closing ??= this.drainAndClose(opts.timeoutMs);
    return this.closing;
  }

  private registration(resume: string[]): Registration {
    return {
      workerId: this.workerId,
      queues: this.opts.queues,
      capacity: this.declaredCapacity(),
      concurrencyKeys: true, // the SDK's handlers receive the token; fenced-resource.ts checks it
      handlers: this.handlerVersions,
      resume,
      agent: this.opts.agent,
    };
  }

  // ---- connection loop ------------------------------------------------------------------------

  private async connectionLoop(): Promise<void> {
    let failures = 0;
    const limit = reconnectLimit(this.opts.reconnect);
    while (this.state === 'running' || this.state === 'draining') {
      let goaway = false;
      let conn: WorkerConnection;
      try {
        conn = new WorkerConnection({
          url: this.opts.url,
          token: this.opts.token,
          registration: this.registration(this.held.resumeIds()),
          knownAttempts: this.held.known(),
          helloTimeoutMs: this.opts.helloTimeoutMs,
          idleTimeoutMs: this.opts.idleTimeoutMs,
        });
      } catch (err) {
        return this.fail(err as Error); // an invalid registration cannot get better by retrying
      }
      // The connection holds frames that came with hello.ok until onOpen has run, so an early
      // task.assign is never mistaken for one from a stale session.
      this.listen(conn, () => (goaway = true));
      this.pendingConn = conn;
      const closed = new Promise<void>((r) => conn.once('close', () => r()));
      try {
        await conn.opened;
      } catch (err) {
        this.pendingConn = undefined;
        if (this.stopped) return;
        if (isFatalConnectError(err)) return this.fail(err);
        failures++;
        if (failures >= limit) {
          return this.fail(
            new GatewayError('UNAVAILABLE', `cannot connect to ${this.opts.url} after ${failures} attempts: ${describeError(err)}`, { fatal: true }),
          );
        }
        const delay = backoffMs(this.opts.reconnect, failures);
        this.log.warn(
          { worker_id: this.workerId, url: this.opts.url, err: describeError(err), attempt: failures, max_attempts: limit, retry_in_ms: delay },
          'orbit worker: connect failed, retrying',
        );
        await this.sleep(delay);
        continue;
      }
      this.pendingConn = undefined;
      const openedAt = Date.now();
      this.onOpen(conn);
      await closed;
      if (this.conn === conn) this.conn = undefined;
      clearInterval(this.renewTimer);
      const code = conn.closeCode ?? 1006;
      this.emit('disconnected', code, conn.closeReason ?? '');
      if (this.stopped) return;
      if (code === 1008 || code === 4409)
        return this.fail(
          new GatewayError(code === 4409 ? 'STATE_CONFLICT' : 'UNAUTHENTICATED', `session closed with ${code}: ${conn.closeReason ?? ''}`, { fatal: true }),
        );
      if (Date.now() - openedAt >= STABLE_SESSION_MS || goaway) failures = 0;
      else failures++;
      this.log.info({ worker_id: this.workerId, code, goaway }, 'orbit worker: disconnected, reconnecting');
      if (!goaway) await this.sleep(backoffMs(this.opts.reconnect, failures));
    }
  }

  private get stopped(): boolean {
    return this.state === 'closed' || this.state === 'failed';
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.stopped) return resolve();
      const t = setTimeout(resolve, ms);
      this.wakeLoop = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  private onOpen(conn: WorkerConnection): void {
    const hello = conn.hello;
    // Resumed attempts keep running; lost ones lose their right to execute (a result already
    // computed is still re-sent: if the gateway got it before the drop it is deduplicated).
    for (const r of hello.resumed) this.held.setLease(r.attempt_id, r.lease_expires_at);
    for (const id of hello.lost) this.held.markLost(id, 'LOST_ON_RESUME');
    this.conn = conn;
    this.log.info({ worker_id: this.workerId, session_id: hello.session_id, url: this.opts.url, queues: this.opts.queues.length }, 'orbit worker: connected');
    const every = hello.renew_ms > 0 ? hello.renew_ms : Math.max(1000, Math.floor(hello.lease_ms / 3));
    this.renewTimer = setInterval(() => this.renew(conn), every);
    this.renewTimer.unref();
    if (this.state === 'draining') conn.drain().catch(() => {});
    this.emit('connected', hello);
    this.settleReady.resolve();
    for (const w of this.waiters.splice(0)) w(conn);
  }

  /** The open session, waiting for a reconnect if needed; null once the worker is closed. */
  private session(): Promise<WorkerConnection | null> {
    if (this.state === 'closed' || this.state === 'failed') return Promise.resolve(null);
    if (this.conn?.isOpen) return Promise.resolve(this.conn);
    return new Promise((r) => this.waiters.push(r));
  }

  /** The open session right now, without a promise (undefined: ask session()). */
  private openSession(): WorkerConnection | undefined {
    return this.state !== 'closed' && this.state !== 'failed' && this.conn?.isOpen ? this.conn : undefined;
  }

  /** Wires a session's events; those of a superseded session (not this.conn) are ignored. */
  private listen(conn: WorkerConnection, onGoaway: () => void): void {
    conn.on('protocolError', (v) => {
      this.log.error({ worker_id: this.workerId, attempt_id: v.attemptId, err: v.message }, 'orbit worker: gateway protocol violation, closing with 1002');
      this.emit('protocolError', v);
    });
    conn.on('assign', (f) => {
      if (conn === this.conn) this.held.admit(f);
    });
    conn.on('cancel', (f) => {
      if (conn === this.conn) this.held.markLost(f.attempt_id, f.reason);
    });
    conn.on('goaway', (f) => {
      onGoaway();
      if (conn !== this.conn) return;
      this.log.info({ worker_id: this.workerId, reason: f.reason }, 'orbit worker: goaway, reconnecting');
      void conn.close(1000, 'goaway');
    });
    conn.on('gatewayError', (f) => {
      if (conn !== this.conn) return;
      this.log.warn({ worker_id: this.workerId, code: f.code, attempt_id: f.attempt_id, err: f.message }, 'orbit worker: gateway error');
      this.emit('gatewayError', new GatewayError(f.code, f.message, { fatal: f.fatal, attemptId: f.attempt_id }));
    });
  }

  private renew(conn: WorkerConnection): void {
    if (!conn.isOpen || this.held.size === 0) return;
    for (const ids of this.held.renewBatches()) {
      conn.renew(ids).then(
        (ok) => {
          for (const l of ok.leases) this.held.setLease(l.attempt_id, l.lease_expires_at);
          for (const id of ok.lost) this.held.markLost(id, 'LEASE_LOST');
        },
        () => {}, // the session closed; the next one resumes and renews
      );
    }
  }

  // ---- shutdown -------------------------------------------------------------------------------

  private async drainAndClose(timeoutMs?: number): Promise<void> {
    if (this.state === 'idle' || this.state === 'failed' || this.state === 'closed') return this.stop();
    this.state = 'draining';
    const conn = this.conn;
    if (conn?.isOpen) {
      // After drain.ok nothing new is assigned. Bounded: a gateway that never answers must not
      // keep the process from shutting down (it closes the session anyway once we are done).
      let t: NodeJS.Timeout | undefined;
      await Promise.race([conn.drain().catch(() => {}), new Promise<void>((r) => (t = setTimeout(r, DRAIN_ACK_MS)))]);
      clearTimeout(t);
    }
    // Attempts assigned while the drain was in flight are finished too.
    await this.held.settle(timeoutMs);
    await this.stop();
  }

  private async stop(): Promise<void> {
    if (this.state !== 'failed') this.state = 'closed';
    clearInterval(this.renewTimer);
    this.wakeLoop?.();
    for (const w of this.waiters.splice(0)) w(null);
    this.settleReady.reject(new ConnectionClosedError(1000, 'worker closed'));
    if (this.state === 'closed') this.settleFinished.resolve();
    const conns = [this.conn, this.pendingConn].filter((c): c is WorkerConnection => c !== undefined);
    await Promise.all(conns.map((c) => c.close(1000, 'worker closed')));
    await this.loop;
  }

  private fail(err: Error): void {
    this.log.error({ worker_id: this.workerId, code: (err as { code?: unknown }).code, err: describeError(err) }, 'orbit worker: fatal error, stopping');
    this.state = 'failed';
    this.held.abortAll(err);
    this.settleReady.reject(err);
    this.settleFinished.reject(err);
    // Nobody awaits run()/ready or listens for 'fatal': a supervisor must still see a failure.
    if (!this.observed) process.exitCode = 1;
    for (const w of this.waiters.splice(0)) w(null);
    clearInterval(this.renewTimer);
    void this.conn?.close(1000, 'worker failed');
    this.emit('fatal', err);
  }
}
