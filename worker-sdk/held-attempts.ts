// The attempts a worker holds (waiting, starting, running or reporting): what a new session
// resumes, lease times from the gateway, loss and refusal (which abort the handler), the run slots
// (at most `capacity` attempts started at once, the prefetched rest waiting in FIFO order) and the
// wait for all of them to finish when the worker closes.
import type { TaskAssignFrame } from '@orbit/protocol/frames';
import { MAX_IDS_PER_FRAME } from '@orbit/protocol/limits';
import type { KnownAttempt, ResultInput } from './connection.js';
import { ConnectionClosedError, GatewayError, LeaseLostError, ProtocolViolation, UnknownOutcomeError } from './errors.js';
import type { Logger } from './task-context.js';

export interface Held {
  id: string;
  frame: TaskAssignFrame;
  /** waiting: granted but not taken for running (no start sent); starting and running hold a run slot. */
  phase: 'waiting' | 'starting' | 'running' | 'reporting';
  /** Holds one of the worker's run slots (from being taken until its handler returns or the
   * attempt is lost, whichever comes first). */
  slot: boolean;
  /** Made on the first read of the handler's `e.signal` (heldSignal): most handlers never read it,
   * and an AbortController (an EventTarget) was the largest allocation of an attempt. An abort
   * before then is kept in `abortReason` and applied when the signal is made, so a handler still
   * sees an already aborted signal. */
  controller?: AbortController;
  aborted: boolean;
  abortReason?: unknown;
  lost: boolean;
  result?: ResultInput;
  leaseExpiresAt: string;
}

/** The attempt's abort signal (made on first use, aborted if the attempt already was). */
export function heldSignal(h: Held): AbortSignal {
  if (!h.controller) {
    h.controller = new AbortController();
    if (h.aborted) h.controller.abort(h.abortReason);
  }
  return h.controller.signal;
}

/** Aborts the attempt's handler with `reason`; the first abort's reason is kept (as AbortController does). */
function abortHeld(h: Held, reason: unknown): void {
  if (h.aborted) return;
  h.aborted = true;
  h.abortReason = reason;
  h.controller?.abort(reason);
}

/** How many finished attempt ids are remembered to ignore a repeated task.assign. */
const FINISHED_MEMORY = 10_000;

/** Bounds the wait, after a close timed out and the handlers were aborted, for them to return and
 * for their results to be answered on the session still open (the Go SDK's drainSettle). */
export const DRAIN_SETTLE_MS = 2000;

export class HeldAttempts {
  private readonly held = new Map<string, Held>();
  private readonly finished = new Set<string>(); // recently finished ids: ignore re-assigns
  private emptied: (() => void)[] = []; // settle() waiting for nothing to be held
  private waiting: Held[] = []; // granted, not yet taken: oldest first
  private running = 0; // attempts holding a run slot
  private aborting = false; // handlers aborted (a timed-out close, a fatal error): nothing more is taken for running

  constructor(
    private readonly log: Logger,
    private readonly workerId: string,
    /** Called once an attempt is marked lost (its handler has been aborted). */
    private readonly onLost: (attemptId: string, reason: string) => void,
    /** How many attempts may hold a run slot now. */
    private readonly runLimit: () => number,
    /** Runs a taken attempt to its end; it calls release() when done (one callback instead of a
     * `done` promise and a `.finally` chain per attempt). */
    private readonly drive: (h: Held) => Promise<void>,
  ) {}

  get size(): number {
    return this.held.size;
  }

  /** The ids a new session asks to resume (at most one frame's worth). */
  resumeIds(): string[] {
    return [...this.held.keys()].slice(0, MAX_IDS_PER_FRAME);
  }

  /** The concurrency key and token each held attempt was assigned with, for the new session's checks. */
  known(): Map<string, KnownAttempt> {
    const known = new Map<string, KnownAttempt>();
    for (const h of this.held.values()) known.set(h.id, { concurrencyKey: h.frame.task.concurrency_key, concurrencyToken: h.frame.concurrency_token });
    return known;
  }

  /** All held ids, split into renew frames. */
  renewBatches(): string[][] {
    const ids = [...this.held.keys()];
    const batches: string[][] = [];
    for (let i = 0; i < ids.length; i += MAX_IDS_PER_FRAME) batches.push(ids.slice(i, i + MAX_IDS_PER_FRAME));
    return batches;
  }

  /** Records a lease expiry the gateway reported (hello.resumed, renew.ok). */
  setLease(id: string, leaseExpiresAt: string): void {
    const h = this.held.get(id);
    if (h) h.leaseExpiresAt = leaseExpiresAt;
  }

  /** Holds a newly assigned attempt: it runs when a run slot is free, after those waiting before
   * it. A re-assign of a held or recently finished attempt is ignored. */
  admit(f: TaskAssignFrame): void {
    if (this.held.has(f.attempt_id) || this.finished.has(f.attempt_id)) return; // same key/token (checked by the connection)
    const h: Held = { id: f.attempt_id, frame: f, phase: 'waiting', slot: false, aborted: false, lost: false, leaseExpiresAt: f.lease_expires_at };
    this.held.set(h.id, h);
    this.waiting.push(h);
    this.pump();
  }

  /** Takes waiting attempts, oldest first, while run slots are free. */
  pump(): void {
    while (this.waiting.length > 0 && this.running < this.runLimit() && !this.aborting) {
      const h = this.waiting.shift()!;
      if (this.held.get(h.id) !== h || h.phase !== 'waiting') continue; // dropped while it waited
      h.phase = 'starting';
      h.slot = true;
      this.running++;
      void this.drive(h);
    }
  }

  /** The attempt's handler is done (or will not run): its run slot goes to the next waiting one. */
  freeSlot(h: Held): void {
    if (!h.slot) return;
    h.slot = false;
    this.running--;
    this.pump();
  }

  /** The attempt is over (answered, lost or refused): no longer held, a re-assign of it ignored. */
  release(h: Held): void {
    if (this.held.get(h.id) !== h) return;
    this.freeSlot(h);
    this.held.delete(h.id);
    this.finished.add(h.id);
    if (this.finished.size > FINISHED_MEMORY) this.finished.delete(this.finished.values().next().value!);
    if (this.held.size === 0) for (const w of this.emptied.splice(0)) w();
  }

  /** The attempt lost its right to execute: abort its handler (a result being reported is kept)
   * and free its run slot at once. The gateway stops counting a lost attempt and may assign the
   * next one now; a handler that ignores its abort must not keep that one (and, for a keyed
   * task, the key's permit granted to it) waiting. Its result, if it ever returns, is not sent. */
  markLost(id: string, reason: string): void {
    const h = this.held.get(id);
    if (!h || h.phase === 'reporting' || h.lost) return;
    h.lost = true;
    if (h.phase === 'waiting') {
      // Never started: nothing to abort and nothing to report (an unstarted attempt's loss
      // consumes no attempt of the task; docs/worker-protocol.md, "Prefetch").
      this.log.warn({ worker_id: this.workerId, attempt_id: id, reason }, 'orbit worker: lease lost before the attempt started; dropped');
      this.release(h);
    } else {
      this.log.warn({ worker_id: this.workerId, attempt_id: id, reason }, 'orbit worker: lease lost, aborting handler');
      abortHeld(h, new LeaseLostError(id, reason));
      this.freeSlot(h); // the handler's own freeSlot when it returns is then a no-op
    }
    this.onLost(id, reason);
  }

  /** True when the gateway answered about this attempt (LEASE_LOST, STATE_CONFLICT, NOT_FOUND):
   * nothing more to do. False when the session dropped and the request must be re-sent. */
  refused(h: Held, err: unknown): boolean {
    if (err instanceof ConnectionClosedError || err instanceof ProtocolViolation) return false;
    if (err instanceof GatewayError && (err.fatal || err.attemptId === undefined)) return false;
    this.log.warn(
      { worker_id: this.workerId, attempt_id: h.id, code: (err as { code?: unknown }).code, err: String(err) },
      'orbit worker: attempt refused by the gateway',
    );
    if (h.phase !== 'reporting') {
      h.lost = true;
      abortHeld(h, err);
    }
    return true;
  }

  /** Aborts every held handler with `reason` and drops the waiting attempts unstarted (their
   * leases run out; the tasks run again without an attempt consumed). */
  abortAll(reason: unknown): void {
    this.aborting = true;
    for (const h of this.waiting.splice(0)) {
      h.lost = true;
      this.release(h);
    }
    for (const h of this.held.values()) abortHeld(h, reason);
  }

  /** Waits until nothing is held, including attempts admitted meanwhile. After `timeoutMs` the
   * waiting attempts are dropped unstarted and the running handlers aborted; for up to
   * DRAIN_SETTLE_MS more the results of the handlers that return (and those already in flight)
   * are sent and answered on the session still open. What is unfinished then is left to its
   * lease's expiry. */
  async settle(timeoutMs?: number): Promise<void> {
    if ((await this.emptiedWithin(timeoutMs)) === 'empty') return;
    this.log.warn({ worker_id: this.workerId, in_flight: this.held.size }, 'orbit worker: close timed out; aborting handlers');
    // The SDK cannot know whether an aborted handler's effect happened: a handler that rethrows
    // its signal's reason reports `unknown` (the task goes to NEEDS_REVIEW, as its lease's expiry
    // would send it); one that throws its own error keeps that error's mapping.
    this.abortAll(new UnknownOutcomeError('worker closed before the handler finished'));
    // An aborted handler that honours its signal returns at once; bounded, so one that ignores it
    // does not keep the worker up.
    if ((await this.emptiedWithin(DRAIN_SETTLE_MS)) === 'timeout') {
      this.log.warn(
        { worker_id: this.workerId, in_flight: this.held.size },
        'orbit worker: attempts still unfinished after the close timeout; their leases will run out',
      );
    }
  }

  /** Resolves 'empty' once nothing is held, or 'timeout' after `timeoutMs` (never without one). */
  private async emptiedWithin(timeoutMs?: number): Promise<'empty' | 'timeout'> {
    if (this.held.size === 0) return 'empty';
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((r) => {
      if (timeoutMs !== undefined) timer = setTimeout(() => r('timeout'), timeoutMs);
    });
    const emptied = new Promise<'empty'>((r) => this.emptied.push(() => r('empty')));
    const outcome = await Promise.race([emptied, timedOut]);
    clearTimeout(timer);
    return outcome;
  }
}
