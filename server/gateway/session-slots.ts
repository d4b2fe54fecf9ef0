// The one owner of a session's slots: capacity, held attempts, and slots promised to claim rounds
// in flight. The counts are private, so no caller can leave them inconsistent.
import type { Assignment } from '../dispatch/grant.js';

/** A session's slots promised to a claim round whose transaction has not committed yet; the claim
 * round only carries them to its delivery. A reservation ends once, by commit() or release(). */
export interface SlotReservation {
  /** Slots it holds. */
  readonly size: number;
  /** The grant committed: its reserved slots become `assignments`' attempts, as many as the
   * session's capacity allows now — a capacity frame may have lowered it meanwhile. Returns the
   * assignments now held; the rest have no slot (the caller releases their attempts). Ends the
   * reservation; a second commit is a bug (throws). */
  commit(assignments: readonly Assignment[]): Assignment[];
  /** The round read its candidates and cannot fill more than `to` of its slots; the rest are free
   * again at once (so a round for work woken after that read can reserve them while this one
   * commits). Never grows; does nothing once the reservation ended. */
  shrink(to: number): void;
  /** The grant did not happen (nothing to grant, rolled back, retried): its slots are free again.
   * Does nothing once the reservation ended. */
  release(): void;
}

export class SessionSlots {
  capacity = 0;
  private readonly attempts = new Map<string, string>();
  private reserved = 0;

  constructor(private readonly takesWork: () => boolean) {}

  get held(): ReadonlyMap<string, string> {
    return this.attempts;
  }

  /** None while the worker does not answer its pings, so a stopped worker is not given tasks it
   * would sit on until their leases run out. */
  get free(): number {
    if (!this.takesWork()) return 0;
    return this.room;
  }

  get room(): number {
    return Math.max(0, this.capacity - this.attempts.size - this.reserved);
  }

  get fullButForRound(): boolean {
    return this.capacity - this.attempts.size <= 0;
  }

  /** Slots for a claim round until its transaction ends, so no other round fills them and no
   * claimed attempt has to be given back. */
  reserve(max: number): SlotReservation | null {
    const size = Math.min(max, this.free);
    if (size <= 0) return null;
    this.reserved += size;
    return this.reservation(size, (n) => void (this.reserved -= n));
  }

  private reservation(size: number, unreserve: (n: number) => void): SlotReservation {
    let open = true;
    const end = (): boolean => {
      if (!open) return false;
      open = false;
      unreserve(size);
      return true;
    };
    return {
      get size() {
        return size;
      },
      shrink: (to) => {
        const excess = size - Math.max(0, to);
        if (!open || excess <= 0) return;
        size -= excess;
        unreserve(excess);
      },
      commit: (assignments) => {
        if (!end()) throw new Error('slot reservation committed after it ended');
        const kept = assignments.slice(0, this.room);
        for (const a of kept) this.attempts.set(a.attemptId, a.queueId);
        return kept;
      },
      release: () => void end(),
    };
  }

  resume(attempts: readonly { attempt_id: string; queueId: string }[]): void {
    for (const a of attempts) this.attempts.set(a.attempt_id, a.queueId);
  }

  finish(attemptId: string): void {
    this.attempts.delete(attemptId);
  }

  /** True when that freed a slot. */
  drop(attemptId: string): boolean {
    return this.attempts.delete(attemptId);
  }
}
