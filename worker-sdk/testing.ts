// A scriptable in-process gateway for testing workers and handlers without a server. It speaks
// the wire protocol (subprotocol, Bearer header, JSON text frames), validates every frame the
// worker sends with parseWorkerFrame, and lets a test play a well-behaved or a hostile gateway.
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  DEFAULT_MAX_FRAME_BYTES,
  SUBPROTOCOL,
  parseWorkerFrame,
  type HelloFrame,
  type HelloOkFrame,
  type TaskAssignFrame,
  type WorkerFrame,
} from '@orbit/protocol/frames';

export const hexId = (): string => randomBytes(16).toString('hex');

export interface FakeGatewayOptions {
  /** Accepted bearer token; others get a 401 envelope. Default: any. */
  token?: string;
  /** Reply to hello with hello.ok (resumed = known live leases). Default true. */
  autoHelloOk?: boolean;
  /** Reply renew.ok / drain.ok automatically. Default true. */
  autoRenew?: boolean;
  autoDrain?: boolean;
  /** Reply start.ok / result.ok automatically. Default false. */
  autoStart?: boolean;
  autoResult?: boolean;
  renewMs?: number;
  leaseMs?: number;
}

/** A lease the fake gateway considers live, for resume and renew answers. */
export interface FakeLease {
  token?: string;
  state: 'LEASED' | 'RUNNING';
}

export class FakeSession {
  hello!: HelloFrame;
  readonly received: WorkerFrame[] = [];
  /** Frames from the worker that failed parseWorkerFrame (should stay empty). */
  readonly invalid: string[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly sessionId = hexId();
  private waiters: { type?: string; resolve: (f: WorkerFrame) => void }[] = [];
  private cursor = 0;

  constructor(
    readonly ws: WebSocket,
    readonly gateway: FakeGateway,
    readonly authorization: string | undefined,
  ) {
    this.closed = new Promise((r) => ws.once('close', (code, reason) => r({ code, reason: reason.toString() })));
  }

  send(frame: object | string): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  helloOk(over: Partial<HelloOkFrame> = {}): void {
    const resumed = (this.hello.resume ?? []).filter((id) => this.gateway.leases.has(id));
    const lost = (this.hello.resume ?? []).filter((id) => !this.gateway.leases.has(id));
    this.send({
      type: 'hello.ok',
      session_id: this.sessionId,
      worker_id: this.hello.worker_id,
      lease_ms: this.gateway.opts.leaseMs ?? 30_000,
      renew_ms: this.gateway.opts.renewMs ?? 10_000,
      max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
      resumed: resumed.map((id) => {
        const l = this.gateway.leases.get(id)!;
        return { attempt_id: id, state: l.state, lease_expires_at: future(), ...(l.token ? { concurrency_token: l.token } : {}) };
      }),
      lost,
      ...over,
    });
  }

  /** Sends a task.assign (and records its lease unless `register: false`). */
  assign(over: AssignOptions = {}): TaskAssignFrame {
    const f = assignFrame(over);
    if (over.register !== false) this.gateway.leases.set(f.attempt_id, { token: f.concurrency_token, state: 'LEASED' });
    this.send(f);
    return f;
  }

  /** The next frame from the worker (of `type`, if given) not yet returned by next(). */
  next(type?: WorkerFrame['type'], timeoutMs = 5000): Promise<WorkerFrame> {
    for (let i = this.cursor; i < this.received.length; i++) {
      if (!type || this.received[i]!.type === type) {
        this.cursor = i + 1;
        return Promise.resolve(this.received[i]!);
      }
    }
    return new Promise((resolve, reject) => {
      const t = setTimeout(
        () => reject(new Error(`no ${type ?? 'frame'} within ${timeoutMs} ms; got ${JSON.stringify(this.received.map((f) => f.type))}`)),
        timeoutMs,
      );
      this.waiters.push({
        type,
        resolve: (f) => {
          clearTimeout(t);
          this.cursor = this.received.length;
          resolve(f);
        },
      });
    });
  }

  close(code = 1000, reason = ''): void {
    this.ws.close(code, reason);
  }

  /** @internal */
  onFrame(text: string): void {
    const p = parseWorkerFrame(text);
    if (!p.ok) {
      this.invalid.push(text);
      return;
    }
    const f = p.frame;
    this.received.push(f);
    const o = this.gateway.opts;
    if (f.type === 'renew' && o.autoRenew !== false) {
      const leases = f.attempt_ids.filter((id) => this.gateway.leases.has(id)).map((id) => ({ attempt_id: id, lease_expires_at: future() }));
      this.send({ type: 'renew.ok', leases, lost: f.attempt_ids.filter((id) => !this.gateway.leases.has(id)) });
    } else if (f.type === 'drain' && o.autoDrain !== false) this.send({ type: 'drain.ok' });
    else if (f.type === 'start' && o.autoStart) {
      const l = this.gateway.leases.get(f.attempt_id);
      if (l) l.state = 'RUNNING';
      this.send(
        l
          ? { type: 'start.ok', attempt_id: f.attempt_id, lease_expires_at: future() }
          : { type: 'error', code: 'LEASE_LOST', message: 'lost', attempt_id: f.attempt_id, fatal: false },
      );
    } else if (f.type === 'result' && o.autoResult) {
      const first = !this.gateway.results.has(f.attempt_id);
      this.gateway.results.set(f.attempt_id, f);
      this.gateway.leases.delete(f.attempt_id);
      this.send({ type: 'result.ok', attempt_id: f.attempt_id, deduplicated: !first, task_state: 'SUCCEEDED' });
    }
    const w = this.waiters.findIndex((x) => !x.type || x.type === f.type);
    if (w >= 0) this.waiters.splice(w, 1)[0]!.resolve(f);
  }
}

export class FakeGateway {
  readonly leases = new Map<string, FakeLease>();
  readonly results = new Map<string, WorkerFrame>();
  readonly sessions: FakeSession[] = [];
  url = '';
  private readonly wss: WebSocketServer;
  private sessionWaiters: ((s: FakeSession) => void)[] = [];
  private taken = 0;

  private constructor(readonly opts: FakeGatewayOptions) {
    this.wss = new WebSocketServer({
      host: '127.0.0.1',
      port: 0,
      path: '/v1/workers/connect',
      handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
      verifyClient: (info, cb) => {
        if (opts.token === undefined || info.req.headers.authorization === `Bearer ${opts.token}`) return cb(true);
        cb(false, 401, UNAUTH, { 'Content-Type': 'application/json' });
      },
    });
    this.wss.on('connection', (ws, req) => {
      const s = new FakeSession(ws, this, req.headers.authorization);
      let first = true;
      ws.on('message', (data, isBinary) => {
        const text = isBinary ? '' : (data as Buffer).toString('utf8');
        if (first) {
          first = false;
          const p = parseWorkerFrame(text);
          if (!p.ok || p.frame.type !== 'hello') return ws.close(1002, 'hello must be first');
          s.hello = p.frame;
          this.sessions.push(s);
          if (opts.autoHelloOk !== false) s.helloOk();
          const w = this.sessionWaiters.shift();
          if (w) {
            this.taken++;
            w(s);
          }
          return;
        }
        s.onFrame(text);
      });
    });
  }

  static async start(opts: FakeGatewayOptions = {}): Promise<FakeGateway> {
    const g = new FakeGateway(opts);
    await new Promise<void>((r) => g.wss.once('listening', () => r()));
    g.url = `http://127.0.0.1:${(g.wss.address() as AddressInfo).port}`;
    return g;
  }

  /** The next session (in connection order) whose hello arrived. */
  nextSession(timeoutMs = 5000): Promise<FakeSession> {
    if (this.taken < this.sessions.length) return Promise.resolve(this.sessions[this.taken++]!);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no session within ${timeoutMs} ms`)), timeoutMs);
      this.sessionWaiters.push((s) => {
        clearTimeout(t);
        resolve(s);
      });
    });
  }

  async close(): Promise<void> {
    for (const c of this.wss.clients) c.terminate();
    await new Promise<void>((r) => this.wss.close(() => r()));
  }
}

const UNAUTH = JSON.stringify({ request_id: 'fake', error: { code: 'UNAUTHENTICATED', message: 'bad credential' } });

function future(ms = 30_000): string {
  return new Date(Date.now() + ms).toISOString();
}

export interface AssignOptions {
  attemptId?: string;
  attemptNo?: number;
  handler?: string;
  handlerVersion?: string;
  payload?: unknown;
  /** Present → keyed task. */
  key?: string;
  /** Present → concurrency_token field (raw string, may be malformed on purpose). */
  token?: string;
  register?: boolean;
}

/** A schema-valid task.assign frame (protocol/frames.ts) with the given key/token. */
export function assignFrame(o: AssignOptions = {}): TaskAssignFrame {
  const f: TaskAssignFrame = {
    type: 'task.assign',
    attempt_id: o.attemptId ?? hexId(),
    attempt_no: o.attemptNo ?? 1,
    lease_expires_at: future(),
    task: {
      id: hexId(),
      queue_id: hexId(),
      handler: o.handler ?? 'object.update',
      handler_version: o.handlerVersion ?? 'v1',
      payload_version: 'v1',
      payload: o.payload ?? { object_ref: 'objects/42' },
      priority: 0,
      deadline_at: future(86_400_000),
    },
  };
  if (o.key !== undefined) f.task.concurrency_key = o.key;
  if (o.token !== undefined) f.concurrency_token = o.token;
  return f;
}
