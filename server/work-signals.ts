// In-process signals of one node: callers emit after their commit, the node's loops subscribe.
// Nothing crosses nodes: other nodes find the same changes by polling.
import { EventEmitter } from 'node:events';
import type { Revoked } from './dispatch/revoke.js';

/** Every method is called after the commit. */
export interface WorkSignals {
  /** The queues may have new WAITING tasks or freed permits. */
  wake(queueIds: Iterable<string>): void;
  /** Attempts revoked by this node: their sessions get task.cancel. */
  revoked(attempts: readonly Revoked[]): void;
  /** A schedule was created, published or resumed: the firer looks at once. */
  schedulesChanged(): void;
}

/** Each `on…` returns its unsubscribe. */
export interface WorkSignalSource {
  onWork(fn: (queueId: string) => void): () => void;
  onRevoked(fn: (attempts: readonly Revoked[]) => void): () => void;
  onSchedulesChanged(fn: () => void): () => void;
}

/** Synchronous: a listener runs before the emitting call returns, in subscription order. */
export class NodeSignals implements WorkSignals, WorkSignalSource {
  private readonly events = new EventEmitter().setMaxListeners(0);

  wake(queueIds: Iterable<string>): void {
    for (const q of queueIds) this.events.emit('work', q);
  }

  revoked(attempts: readonly Revoked[]): void {
    if (attempts.length > 0) this.events.emit('revoked', attempts);
  }

  schedulesChanged(): void {
    this.events.emit('schedules');
  }

  onWork(fn: (queueId: string) => void): () => void {
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
