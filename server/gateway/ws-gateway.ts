// The worker gateway of one node: the WebSocket endpoint, the registry of local sessions, and the
// background loops (dispatcher, sweeper, reconciliation with other nodes' changes). It is the host
// of its parts (SessionHost, DispatcherHost, ReconcilerHost: each says what its part needs), and
// hears the rest of the node only through its WorkSignals (wake-ups, revoked attempts).
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type Server as WsServer } from 'ws';
import { OrbitError } from '@orbit/protocol/errors';
import { SUBPROTOCOL } from '@orbit/protocol/frames';
import type { Logger } from 'pino';
import type { AppContext } from '../app-context.js';
import type { WorkSignals, WorkSignalSource } from '../work-signals.js';
import { authenticate } from '../http/auth.js';
import { requireScope } from '../admin/access.js';
import { endSocketWithError } from '../http/envelope.js';
import { newId } from '../ids.js';
import type { Pool } from '../db/pool.js';
import { Session } from './session.js';
import { SUPERSEDED, type SessionHost } from './session-host.js';
import { SessionHostBase } from './session-host-base.js';
import { Dispatcher, type DispatcherHost } from './dispatcher.js';
import { Reconciler, type ReconcilerHost } from './reconciler.js';
import { frameCommitter, type FrameCommitter } from '../dispatch/frame-committer.js';
import { WorkerSocket } from './worker-socket.js';
import { admission, type Admit } from '../dispatch/coalesce.js';
import { guardTimer, reportInternal, toOrbitError } from '../boundary.js';

/** What the gateway needs of the node: its services, and `shuttingDown` (read at each upgrade). */
export type GatewayApp = Pick<AppContext, 'config' | 'pool' | 'log' | 'metrics' | 'advanceSteps' | 'shuttingDown'>;

export class Gateway extends SessionHostBase implements SessionHost, DispatcherHost, ReconcilerHost {
  readonly config: AppContext['config'];
  readonly pool: Pool;
  readonly log: Logger;
  readonly metrics: AppContext['metrics'];
  readonly advanceSteps: AppContext['advanceSteps'];
  /** Registered sessions (hello committed, not ended). */
  readonly sessions = new Map<string, Session>();
  /** `${namespace}/${worker_id}` → the newest local session of that identity. */
  private readonly byWorker = new Map<string, Session>();
  readonly wss: WsServer<typeof WorkerSocket>;
  readonly dispatcher: Dispatcher;
  readonly reconciler: Reconciler;
  readonly frames: FrameCommitter;
  /** The sessions' own transactions (renew, hello, session rows): fair turns per application. */
  readonly admission: Admit;
  private pingTimer: NodeJS.Timeout;
  private readonly offWork: () => void;
  private readonly offRevoked: () => void;

  constructor(
    private readonly app: GatewayApp,
    server: http.Server,
    /** The node's signals (AppContext.signals and its subscriber side). */
    readonly signals: WorkSignals & WorkSignalSource,
  ) {
    super();
    ({ config: this.config, pool: this.pool, log: this.log, metrics: this.metrics, advanceSteps: this.advanceSteps } = app);
    const pingMs = app.config.pingIntervalMs;
    this.wss = new WebSocketServer<typeof WorkerSocket>({
      WebSocket: WorkerSocket,
      // Validated in Session.onMessage, so invalid UTF-8 is a PROTOCOL_ERROR (1002) with its
      // error frame rather than ws's bare 1007.
      skipUTF8Validation: true,
      noServer: true,
      maxPayload: app.config.maxFrameBytes * 2,
      perMessageDeflate: false,
      handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
    });
    server.on('upgrade', (req, socket, head) => {
      this.onUpgrade(req, socket, head).catch((err: unknown) => {
        reportInternal(app, 'upgrade', err);
        socket.destroy();
      });
    });
    this.frames = frameCommitter(app.pool, this.advanceSteps, (size, seconds) => {
      app.metrics.commitSeconds.observe({ op: 'frames' }, seconds);
      app.metrics.batchSize.observe(size);
    });
    this.admission = admission(app.config.sessionTxSlots, app.config.sessionTxSlotsPerApplication, (n) => app.metrics.sessionTxWaiting.set(n));
    this.dispatcher = new Dispatcher(this);
    this.reconciler = new Reconciler(this);
    this.offWork = signals.onWork((q) => this.dispatcher.wake(q));
    // task.cancel for the attempts this node revoked (the sweeper, an HTTP cancel).
    this.offRevoked = signals.onRevoked((list) => {
      for (const r of list) {
        const s = this.sessions.get(r.sessionId);
        if (s && s.slots.held.has(r.attemptId)) s.cancelAttempt(r.attemptId, r.reason);
      }
    });
    this.pingTimer = setInterval(
      guardTimer(app, 'ping', () => {
        for (const s of this.sessions.values()) s.heartbeat();
        for (const s of this.pending) s.heartbeat();
      }),
      pingMs,
    );
  }

  /** Sessions that have not finished hello yet (for heartbeats and shutdown). */
  private readonly pending = new Set<Session>();

  private async onUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    // A refusal is answered in the HTTP error envelope, with its own request id.
    const requestId = newId();
    const reject = (err: OrbitError) => void endSocketWithError(socket, requestId, err);
    try {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path !== '/v1/workers/connect') return reject(new OrbitError('NOT_FOUND', 'no WebSocket endpoint here'));
      if (this.app.shuttingDown) return reject(new OrbitError('UNAVAILABLE', 'gateway is shutting down'));
      const offered = String(req.headers['sec-websocket-protocol'] ?? '')
        .split(',')
        .map((s) => s.trim());
      if (!offered.includes(SUBPROTOCOL)) return reject(new OrbitError('INVALID_ARGUMENT', `subprotocol ${SUBPROTOCOL} is required`));
      const cred = await authenticate(this.pool, req);
      requireScope(cred, 'workers:connect');
      requireScope(cred, 'workers:consume');
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        // The upgrade's own boundary: the socket is a WebSocket now, so a failure here closes it
        // with 1011 instead of answering HTTP.
        try {
          ws.batchWrites(socket, this.metrics);
          const s = new Session(this, ws, cred);
          this.pending.add(s);
          ws.once('close', () => this.pending.delete(s));
        } catch (err) {
          reportInternal(this.app, 'upgrade', err);
          ws.sendFatal({ type: 'error', code: 'INTERNAL', message: 'internal error', fatal: true });
          ws.close(1011, 'internal error');
        }
      });
    } catch (err) {
      // Counted in orbit_internal_errors_total{where="upgrade"} like every other boundary.
      return reject(toOrbitError(this.app, 'upgrade', err, requestId));
    }
  }

  register(s: Session): void {
    this.pending.delete(s);
    const key = `${s.cred.namespaceId}/${s.workerId}`;
    const older = this.byWorker.get(key);
    // A second live session of the same worker_id supersedes the first (terminate unregisters it).
    if (older && older !== s) older.terminate(4409, SUPERSEDED, 'STATE_CONFLICT');
    this.byWorker.set(key, s);
    this.sessions.set(s.id, s);
    this.app.metrics.liveSessions.set(this.sessions.size);
  }

  unregister(s: Session): void {
    this.sessions.delete(s.id);
    const key = `${s.cred.namespaceId}/${s.workerId}`;
    if (this.byWorker.get(key) === s) this.byWorker.delete(key);
    this.app.metrics.liveSessions.set(this.sessions.size);
  }

  async close(): Promise<void> {
    clearInterval(this.pingTimer);
    this.offWork();
    this.dispatcher.stop();
    this.reconciler.stop();
    for (const s of [...this.sessions.values(), ...this.pending]) {
      s.send({ type: 'goaway', reason: 'node shutting down' });
    }
    await Promise.allSettled([...this.inflight]);
    await this.dispatcher.idle();
    for (const s of [...this.sessions.values(), ...this.pending]) s.terminate(1001, 'going away');
    await Promise.allSettled([...this.inflight]);
    // Cancels committed while the sessions drained were still delivered; none is open now.
    this.offRevoked();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}
