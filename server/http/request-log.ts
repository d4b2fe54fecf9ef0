// One line per HTTP request, with the route template rather than the raw path, which may carry
// ids. Never bodies, headers or tokens.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';

export function logRequestOnFinish(log: Logger, req: IncomingMessage, res: ServerResponse, route: () => string): void {
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
