// node:http rather than a framework: owning the body reader keeps the 413/400 rules, the envelope
// and the X-Request-Id header exact on every path, errors included.
import http from 'node:http';
import type { Logger } from 'pino';
import { OrbitError } from '@orbit/protocol/errors';
import type { AppContext } from '../app-context.js';
import { newId } from '../ids.js';
import { reportInternal, toOrbitError } from '../boundary.js';
import { serveConsole } from '../console/serve.js';
import { authenticate, authenticateCached, recheckCredential } from './auth.js';
import { endSocketWithError, sendData, sendError } from './envelope.js';
import { buildRoutes } from './routes.js';
import { methodNotAllowed } from './hints.js';
import type { RequestCtx } from './context.js';

export function createHttpServer(app: AppContext): http.Server {
  const router = buildRoutes(app);
  // Slow senders get 408. Node checks these deadlines every connectionsCheckingInterval, whose
  // default would let such sockets live well past them.
  const server = http.createServer(
    { requestTimeout: 60_000, headersTimeout: 10_000, connectionsCheckingInterval: 1_000, maxHeaderSize: 16 * 1024 },
    (req, res) => {
      const requestId = newId();
      // handle() answers every error itself: this catches only a failure while writing an answer.
      handle(app, router, req, res, requestId).catch((err: unknown) => {
        reportInternal(app, 'http', err, { request_id: requestId, url_path: req.url?.split('?')[0] });
        try {
          sendError(res, requestId, new OrbitError('INTERNAL', `internal error (request ${requestId})`));
        } catch {
          res.destroy();
        }
      });
    },
  );
  server.keepAliveTimeout = 5_000;
  // Requests node's parser refuses still get the envelope and an X-Request-Id.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const requestId = newId();
    const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'ERR_HTTP_HEADERS_TIMEOUT';
    const error = timedOut
      ? new OrbitError('REQUEST_TIMEOUT', 'request not received in time (headers within 10 s, whole request within 60 s)')
      : new OrbitError('INVALID_ARGUMENT', err.code === 'HPE_HEADER_OVERFLOW' ? 'request headers too large' : 'malformed HTTP request');
    let replied = false;
    const reply = () => {
      if (replied) return;
      replied = true;
      if (endSocketWithError(socket, requestId, error)) app.metrics.httpRequests.inc({ route: 'unparsed', status: String(error.httpStatus) });
    };
    // Garbage pipelined behind a complete request is answered after that request's response, never
    // in the middle of it. Broken bytes in the body of the request in flight are answered at once:
    // that handler is stuck reading and fails harmlessly once the connection closes.
    const inflight = (socket as unknown as { _httpMessage?: http.ServerResponse | null })._httpMessage;
    if (inflight && !inflight.writableFinished && inflight.req?.complete) inflight.once('finish', reply).once('close', reply);
    else reply();
  });
  return server;
}

async function handle(
  app: AppContext,
  router: ReturnType<typeof buildRoutes>,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  requestId: string,
): Promise<void> {
  // The child logger is created only when something logs with it: it costs every request otherwise.
  let log: Logger | undefined;
  const requestLog = (): Logger => (log ??= app.log.child({ request_id: requestId }));
  let routeName = 'unmatched';
  if (app.log.isLevelEnabled('info')) logRequestOnFinish(requestLog(), req, res, () => routeName);
  try {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://orbit.invalid');
    } catch {
      throw new OrbitError('INVALID_ARGUMENT', 'malformed request target');
    }
    if (url.pathname === '/console' || url.pathname.startsWith('/console/')) {
      // Static files with their own headers; the page asks for a credential itself.
      routeName = 'GET /console/';
      const status = serveConsole(req, res, url.pathname, requestId);
      app.metrics.httpRequests.inc({ route: routeName, status: String(status) });
      return;
    }
    // Routes match the path as sent: a target that URL parsing rewrites (dot segments, `%2e%2e`, a
    // leading `//`) names no resource. An absolute-form target is compared without its authority.
    const sent = (req.url ?? '/').split('?', 1)[0]!.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '') || '/';
    const m = sent === url.pathname ? router.match(req.method ?? 'GET', url.pathname) : null;
    if (m === null) throw new OrbitError('NOT_FOUND', `no route ${sent.slice(0, 200)}`);
    if ('allow' in m) throw methodNotAllowed(res, req.method ?? '', url.pathname, m.allow);
    routeName = `${m.route.method} ${m.route.template}`;
    if (app.shuttingDown && m.route.auth) throw new OrbitError('UNAVAILABLE', 'gateway is shutting down; retry on another node');
    const ctx = {
      app,
      req,
      res,
      requestId,
      url,
      params: m.params,
      get log() {
        return requestLog();
      },
    } as RequestCtx;
    if (m.route.auth && m.route.checksCredential) {
      // Saves a statement per request: the credential's liveness is read in the route's own
      // transaction instead.
      const a = await authenticateCached(app.pool, req);
      ctx.cred = a.cred;
      ctx.credentialChecked = a.checked;
    } else if (m.route.auth) ctx.cred = await authenticate(app.pool, req);
    const reply = await m.route.handle(ctx).catch(async (err: unknown) => {
      // A revoked credential from the cache gets 401 before any other refusal, as with a lookup first.
      if (ctx.credentialChecked === false) await recheckCredential(app.pool, req);
      throw err;
    });
    if ('raw' in reply) {
      res.writeHead(reply.status, { ...reply.headers, 'Content-Type': reply.contentType, 'X-Request-Id': requestId });
      res.end(reply.body);
    } else sendData(res, requestId, reply.status, reply.data, reply.json);
    app.metrics.httpRequests.inc({ route: routeName, status: String(reply.status) });
  } catch (err) {
    const e = toOrbitError(app, 'http', err, requestId, { route: routeName });
    sendError(res, requestId, e);
    app.metrics.httpRequests.inc({ route: routeName, status: String(e.httpStatus) });
  }
}

/** One line per HTTP request, with the route template rather than the raw path, which may carry
 * ids. Never bodies, headers or tokens. */
function logRequestOnFinish(log: Logger, req: http.IncomingMessage, res: http.ServerResponse, route: () => string): void {
  const t0 = process.hrtime.bigint();
  const done = () => {
    res.off('finish', done).off('close', done);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    log.info(
      { method: req.method, route: route(), status: res.statusCode, duration_ms: Math.round(ms * 100) / 100, aborted: !res.writableFinished || undefined },
      'request',
    );
  };
  res.once('finish', done).once('close', done);
}
