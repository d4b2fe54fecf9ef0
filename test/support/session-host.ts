// A small in-process host for gateway sessions (test/gateway-session-unit.test.ts): the real
// Session, Dispatcher, FrameCommitter, TaskSubmitter and NodeSignals around a real pool and a plain
// WebSocket server — no HTTP server, no gateway process, nothing of ours replaced by a fake. It is
// what SessionHost and DispatcherHost make possible: a Session needs only this, not a Gateway and
// an AppContext. Tracking, wake-ups, kicks and the release of undelivered attempts are the
// gateway's own (SessionHostBase, which both extend).
import { advanceRunsInTx } from '../../server/workflows/apply.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { WebSocketServer, type Server as WsServer } from 'ws';
import type { Pool } from '../../server/db/pool.js';
import { findCredentialByTokenHash } from '../../server/db/credentials.js';
import { hashToken } from '../../server/admin/access.js';
import { createMetrics } from '../../server/metrics.js';
import { NodeSignals } from '../../server/work-signals.js';
import { frameCommitter, type FrameCommitter } from '../../server/dispatch/frame-committer.js';
import { TaskSubmitter, type SubmitOutcome } from '../../server/dispatch/submit.js';
import { normalizeSubmit } from '../../server/dispatch/submit-input.js';
import { Session } from '../../server/gateway/session.js';
import type { SessionHost } from '../../server/gateway/session-host.js';
import { SessionHostBase } from '../../server/gateway/session-host-base.js';
import { Dispatcher, type DispatcherHost } from '../../server/gateway/dispatcher.js';
import { WorkerSocket } from '../../server/gateway/worker-socket.js';
import { admission } from '../../server/dispatch/coalesce.js';

export class InProcessHost extends SessionHostBase implements SessionHost, DispatcherHost {
  readonly log = pino({ level: 'silent' });
  readonly metrics = createMetrics();
  readonly advanceSteps = advanceRunsInTx;
  /** Mutable so a test can shorten the hello timer of the sessions it opens next. */
  readonly config = {
    maxFrameBytes: 1024 * 1024,
    nodeId: 'unit-node',
    helloTimeoutMs: 10_000,
    sessionMaxFramesInFlight: 64,
    sessionMaxBytesInFlight: 16 * 1024 * 1024,
    pongTimeoutMs: 1_000,
  };
  readonly admission = admission(8, 4);
  readonly signals = new NodeSignals();
  readonly sessions = new Map<string, Session>();
  readonly frames: FrameCommitter;
  readonly dispatcher: Dispatcher;
  readonly submitter: TaskSubmitter;
  /** Every session the server side created, in connection order (registered or not). */
  readonly created: Session[] = [];
  /** Queue ids of every wake-up, in order (they all go through `signals`). */
  readonly woken: string[] = [];
  private readonly wss: WsServer<typeof WorkerSocket>;
  private readonly server = http.createServer();
  private readonly unsubscribe: () => void;
  private waiters: ((s: Session) => void)[] = [];

  constructor(readonly pool: Pool) {
    super();
    this.frames = frameCommitter(pool, advanceRunsInTx, () => {});
    this.dispatcher = new Dispatcher(this);
    this.submitter = new TaskSubmitter({ pool, metrics: this.metrics, log: this.log, signals: this.signals });
    this.unsubscribe = this.signals.onWork((q) => {
      this.woken.push(q);
      this.dispatcher.wake(q);
    });
    this.wss = new WebSocketServer<typeof WorkerSocket>({ WebSocket: WorkerSocket, server: this.server, skipUTF8Validation: true });
  }

  /** Listens on 127.0.0.1; every connection becomes a Session of the credential of its bearer token. */
  async listen(): Promise<string> {
    this.wss.on('connection', (ws, req) => {
      ws.batchWrites(req.socket);
      const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
      void findCredentialByTokenHash(this.pool, hashToken(token)).then((cred) => {
        if (!cred) return ws.close(1008, 'unknown token');
        const s = new Session(this, ws, cred);
        this.created.push(s);
        for (const w of this.waiters.splice(0)) w(s);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The next session the server side creates (call before connecting). */
  nextSession(): Promise<Session> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async submit(
    cred: { id: string; namespaceId: string; applicationId: string; queueIds: string[] | '*' },
    queueId: string,
    key: string,
    fields: { concurrency_key?: string } = {},
  ): Promise<SubmitOutcome> {
    const prepared = normalizeSubmit({ queue_id: queueId, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: { key }, ...fields });
    return this.submitter.submit({ credential: cred, key, prepared });
  }

  register(s: Session): void {
    this.sessions.set(s.id, s);
  }

  unregister(s: Session): void {
    this.sessions.delete(s.id);
  }

  /** Waits for everything tracked (replies after their commit, session row updates). */
  async settle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  async close(): Promise<void> {
    this.unsubscribe();
    this.dispatcher.stop();
    await this.dispatcher.idle();
    for (const s of this.created) s.terminate(1001, 'going away');
    await this.settle();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.settle();
  }
}
