// Error boundaries: every message handler and timer runs inside one, so a bug that input can reach
// ends one request (500) or one session (1011), logged and counted, and the node keeps serving.
import type { Logger } from 'pino';
import type { Metrics } from './metrics.js';
import { OrbitError } from '@orbit/protocol/errors';
import { isDatabaseRefusal } from './db/pool.js';

export { isDatabaseRefusal };

export type BoundaryWhere = 'http' | 'frame' | 'upgrade' | 'timer' | 'session';

type ReportApp = { log: Logger; metrics: Pick<Metrics, 'internalErrors'> };

export function reportInternal(app: ReportApp, where: BoundaryWhere, err: unknown, bindings: Record<string, unknown> = {}): void {
  app.metrics.internalErrors.inc({ where });
  app.log.error({ err, where, ...bindings }, 'internal error caught at the boundary');
}

/** The answer to an error that ended a request or an upgrade; only unexpected errors are reported. */
export function toOrbitError(app: ReportApp, where: BoundaryWhere, err: unknown, requestId: string, bindings: Record<string, unknown> = {}): OrbitError {
  if (err instanceof OrbitError) return err;
  if (isDatabaseRefusal(err)) {
    app.log.warn({ err, request_id: requestId }, 'database unavailable or busy');
    return new OrbitError('UNAVAILABLE', 'database unavailable or busy; retry with the same Idempotency-Key');
  }
  reportInternal(app, where, err, { request_id: requestId, ...bindings });
  return new OrbitError('INTERNAL', `internal error (request ${requestId})`);
}

/** Runs `fn`; an OrbitError it throws names its field, and starts its message, under `prefix`. */
export function underField<T>(prefix: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (!(err instanceof OrbitError)) throw err;
    const field = typeof err.details?.field === 'string' ? `${prefix}.${err.details.field}` : prefix;
    throw new OrbitError(err.code, `${prefix}.${err.message}`, { ...err.details, field });
  }
}

/** Runs one tick of a timer inside the boundary; the returned promise never rejects, so a loop
 * that re-arms itself after the tick keeps running whatever the tick did. */
export async function guarded(app: ReportApp, name: string, fn: () => unknown): Promise<void> {
  try {
    await fn();
  } catch (err) {
    // The next tick runs the timer's work again; a refusing database is no bug.
    if (isDatabaseRefusal(err)) app.log.warn({ err, timer: name }, 'timer tick skipped: database unavailable or busy');
    else reportInternal(app, 'timer', err, { timer: name });
  }
}

/** A timer callback inside the boundary (for setInterval). */
export function guardTimer(app: ReportApp, name: string, fn: () => unknown): () => void {
  return () => void guarded(app, name, fn);
}
