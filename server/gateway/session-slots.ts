// The one owner of a session's slots: its capacity, the attempts it holds, and the slots promised
// to claim rounds whose transactions have not committed. Every promise is a SlotReservation
// (dispatch/slot-reservation.ts) made here by reserve() and ended by its commit() (the granted
// attempts become held) or its release(); the counts behind them are private to this module, so no
// caller can leave them inconsistent. Held attempts leave by finish() (a result) or drop() (lease
// lost, revoked). The dispatcher (claim rounds) and Session (hello's resumed attempts, results,
// deliveries) both go through it.
import type { SlotReservation } from '../dispatch/slot-reservation.js';

export class SessionSlots {
  /** Slots the worker offers (hello, then its capacity frames). */
  capacity = 0;
  /** Attempts (LEASED/RUNNING) bound to this session → their queue. */
  private readonly attempts = new Map<string, string>();
  /** Slots of claim rounds' reservations not ended. */
  private reserved = 0;

  /** `takesWork`: whether the session takes new work now (open, socket open, worker answering its
   * pings). */
  constructor(private readonly takesWork: () => boolean) {}

  /** The held attempts and their queues (capacity accounting, cancel delivery, renew, a start's
   * lease length), read-only: they change only through this class. */
  get held(): ReadonlyMap<string, string> {
    return this.attempts;
  }

  /** Slots for new assignments. None while the worker does not answer its pings (liveness.ts): a
   * worker process that is stopped (SIGSTOP, a debugger, a frozen VM) would otherwise keep
   * receiving tasks until it misses two pongs (~30 s) and sit on them until their leases run out. */
  get free(): number {
    if (!this.takesWork()) return 0;
    return this.room;
  }

  /** Slots neither held nor reserved, whether or not the session takes work now. */
  get room(): number {
    return Math.max(0, this.capacity - this.attempts.size - this.reserved);
  }

  /** No slot left but those a claim round in flight holds. */
  get fullButForRound(): boolean {
    return this.capacity - this.attempts.size <= 0;
  }

  /** Up to `max` free slots for a claim round, until its transaction ends: no other round can
   * fill them meanwhile, so capacity is never exceeded and no claimed attempt has to be given back
   * (its attempt number and token burned). Null when no slot is free. */
  reserve(max: number): SlotReservation | null {
    const size = Math.min(max, this.free);
    if (size <= 0) return null;
    this.reserved += size;
    return this.reservation(size, (n) => void (this.reserved -= n));
  }

  /** A reservation whose end happens once, by commit or release; `unreserve(n)` gives back n of
   * its slots (all of them at its end, the excess at a shrink). */
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

  /** Attempts the session holds from the start (hello's resumed attempts). */
  resume(attempts: readonly { attempt_id: string; queueId: string }[]): void {
    for (const a of attempts) this.attempts.set(a.attempt_id, a.queueId);
  }

  /** A result of `attemptId` committed: its slot is free. */
  finish(attemptId: string): void {
    this.attempts.delete(attemptId);
  }

  /** The session no longer holds `attemptId` (lease lost, revoked, finished elsewhere); true when
   * that freed a slot. */
  drop(attemptId: string): boolean {
    return this.attempts.delete(attemptId);
  }
}
