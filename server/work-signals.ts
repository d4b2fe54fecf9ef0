// In-process signals of one node: the one way an HTTP command, a submit, a schedule fire or the
// gateway itself tells this node's loops that committed rows changed. Callers only emit (after
// their commit); the loops (the gateway's dispatcher and session registry, the schedule firer)
// subscribe. Nothing crosses nodes: other nodes find the same changes by polling.
import { EventEmitter } from 'node:events';
import type { Revoked } from './dispatch/revoke.js';

/** Why a queue is woken: `work` — it may have new WAITING tasks (a submit, a retry, a resume, a
 * task back from an expired lease); `released` — only permits came free (a result that finished
 * its task), no new task. */
export type WakeCause = 'work' | 'released';

/** What callers use (see AppContext.signals). Every method is called after the commit. */
export interface WorkSignals {
  /** Queues that got new work or freed permits: their local sessions are due for a claim round. */
  wake(queueIds: Iterable<string>, cause?: WakeCause): void;
  /** Attempts revoked by this node (cancel, sweeper, hello): their sessions get task.cancel. */
  revoked(attempts: readonly Revoked[]): void;
  /** A schedule was created, published or resumed: the firer looks at once. */
  schedulesChanged(): void;
}

/** The subscriber side, for the node's loops. Each `on…` returns its unsubscribe. */
export interface WorkSignalSource {
  onWork(fn: (queueId: string, cause: WakeCause) => void): () => void;
  onRevoked(fn: (attempts: readonly Revoked[]) => void): () => void;
  onSchedulesChanged(fn: () => void): () => void;
}

/** The node's signals: synchronous, in-process (an EventEmitter), so a listener runs before the
 * emitting call returns, in subscription order. */
export class NodeSignals implements WorkSignals, WorkSignalSource {
  private readonly events = new EventEmitter().setMaxListeners(0);

  wake(queueIds: Iterable<string>, cause: WakeCause = 'work'): void {
    for (const q of queueIds) this.events.emit('work', q, cause);
  }

  revoked(attempts: readonly Revoked[]): void {
    if (attempts.length > 0) this.events.emit('revoked', attempts);
  }

  schedulesChanged(): void {
    this.events.emit('schedules');
  }

  onWork(fn: (queueId: string, cause: WakeCause) => void): () => void {
    this.events.on('work', fn);
    return () => void this.events.off('work', fn);
  }

  onRevoked(fn: (attempts: readonly Revoked[]) => void): () => void {
    this.events.on('revoked', fn);
    return () => void this.events.off('revoked', fn);
  }

  onSchedulesChanged(fn: () => void): () => void {
    this.events.on('schedules', fn);
    return () => void this.events.off('schedules', fn);
  }
}
