// One assigned attempt from task.assign to its answered result (docs/worker-protocol.md, "What an SDK
// must do"): task.start before any handler code, the handler with the attempt's abort signal,
// then the result re-sent across reconnects until the gateway answers it. The worker (worker.ts)
// owns the sessions; this module only asks it for the open one.
import type { ResultInput, WorkerConnection } from './connection.js';
import { heldSignal, type Held, type HeldAttempts } from './held-attempts.js';
import { RESULT_NOT_SENT } from './errors.js';
import { errorResult, handlerNotFoundResult, locallyRejectedResult, successResult } from './handler-result.js';
import { handlerFor, taskContext, type Handler, type Logger } from './task-context.js';
import type { WorkerEvents } from './worker-options.js';

/** What an attempt needs from its worker. */
export interface AttemptHost {
  readonly workerId: string;
  readonly log: Logger;
  readonly held: HeldAttempts;
  readonly handlers: Record<string, Handler>;
  readonly defaultVersions: string[];
  /** The open session, waiting for a reconnect if needed; null once the worker is closed. */
  session(): Promise<WorkerConnection | null>;
  /** The open session if there is one now: spares the attempt an await (a promise hop) per request. */
  openSession(): WorkerConnection | undefined;
  /** The gateway answered the attempt's result (or refused it, or it could not be sent). */
  answered(r: WorkerEvents['result'][0]): void;
}

/** Runs a held attempt taken for running to its end: started, handled, reported (or lost on the
 * way); then released. */
export async function runAttempt(host: AttemptHost, h: Held): Promise<void> {
  try {
    const fn = handlerFor(host.handlers, h.frame, host.defaultVersions);
    if (!fn) {
      // Not ours to run (the filter should have prevented it): fail it without starting, loudly.
      host.log.error(
        { worker_id: host.workerId, attempt_id: h.id, handler: h.frame.task.handler, handler_version: h.frame.task.handler_version },
        'orbit worker: no handler for this task; failing it',
      );
      h.phase = 'reporting';
      h.result = handlerNotFoundResult(h.id, h.frame.task);
      return await reportResult(host, h);
    }
    // Handler code must not run before start.ok; a start lost with the socket is re-sent (a
    // repeated start answers start.ok again).
    for (;;) {
      if (h.lost) return;
      const conn = host.openSession() ?? (await host.session());
      if (!conn || h.lost) return;
      try {
        const ok = await conn.start(h.id);
        h.leaseExpiresAt = ok.lease_expires_at;
        break;
      } catch (err) {
        if (host.held.refused(h, err)) return;
        await conn.whenClosed; // re-send on the next session, never spin on a closing one
      }
    }
    if (h.lost) return;
    h.phase = 'running';
    let result: ResultInput;
    try {
      const value = await fn(taskContext(h.frame, h.leaseExpiresAt, () => heldSignal(h), host.workerId));
      result = successResult(h.id, value);
    } catch (err) {
      result = errorResult(h.id, err);
    }
    // The handler is done: its run slot goes to the next waiting attempt while the result travels.
    host.held.freeSlot(h);
    if (h.lost) {
      host.log.warn({ worker_id: host.workerId, attempt_id: h.id }, 'orbit worker: handler finished after its lease was lost; result not sent');
      return;
    }
    h.phase = 'reporting';
    h.result = result;
    return await reportResult(host, h);
  } finally {
    host.held.release(h);
  }
}

/** Sends the result until the gateway answers it, across reconnects. */
async function reportResult(host: AttemptHost, h: Held): Promise<void> {
  for (;;) {
    const conn = host.openSession() ?? (await host.session());
    if (!conn) {
      // The worker stopped with no session to send it on: the result is lost and the lease runs
      // out. A started attempt's task then goes to NEEDS_REVIEW (expire-running: its effect is
      // unknown), not to another run; an unstarted one's (HANDLER_NOT_FOUND) waits again.
      host.log.warn(
        { worker_id: host.workerId, attempt_id: h.id, outcome: h.result!.outcome },
        'orbit worker: stopped before the result was sent; the lease will run out',
      );
      host.answered({ attemptId: h.id, outcome: h.result!.outcome, error: RESULT_NOT_SENT });
      return;
    }
    try {
      const ok = await conn.result(h.result!);
      host.answered({ attemptId: h.id, outcome: h.result!.outcome, taskState: ok.task_state, deduplicated: ok.deduplicated });
      return;
    } catch (err) {
      const rejected = locallyRejectedResult(h.id, err);
      if (rejected) {
        h.result = rejected; // our own frame was refused locally (too big / invalid): report that instead
        continue;
      }
      const code = (err as { code?: unknown }).code;
      if (host.held.refused(h, err)) {
        host.answered({ attemptId: h.id, outcome: h.result!.outcome, error: String(code) });
        return;
      }
      await conn.whenClosed;
    }
  }
}
