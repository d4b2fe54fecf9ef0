// The one owner of a session's slots: its capacity, the attempts it holds, the slots promised to
// claim rounds and key hand-offs whose transactions have not committed, and the held attempts whose
// slot a committing refill takes over. Every promise is a SlotReservation
// (dispatch/slot-reservation.ts) made here — reserve() for a claim round or a hand-off,
// reserveFreed() for a refill — and ends by its commit() (the granted attempts become held) or its
// release(); the counts behind them are private to this module, so no caller can leave them
// inconsistent. Held attempts leave by finish() (a result), drop() (lease lost, revoked) or a
// refill's commit. The dispatcher (claim rounds), the gateway's hand-off host (hand-offs, refills)
// and Session (hello's resumed attempts, results, deliveries) all go through it.
import type { SlotReservation } from '../dispatch/slot-reservation.js';

export class SessionSlots {
  /** Slots the worker offers (hello, then its capacity frames). */
  capacity = 0;
  /** Attempts (LEASED/RUNNING) bound to this session → their queue. */
  private readonly attempts = new Map<string, string>();
  /** Slots of reservations not ended (claim rounds and hand-offs; a refill reuses a held slot). */
  private reserved = 0;
  /** Of `reserved`, the slots of claim rounds in flight. */
  private roundReserved = 0;
  /** Held attempts whose slot a refill's reservation takes over. */
  private readonly reusing = new Set<string>();

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
    return this.capacity - this.attempts.size - (this.reserved - this.roundReserved) <= 0;
  }

  /** Up to `max` free slots for a claim round (`round`) or a key hand-off, until its transaction
   * ends: no other round or hand-off can fill them meanwhile, so capacity is never exceeded and
   * no claimed attempt has to be given back (its attempt number and token burned). Null when no
   * slot is free. */
  reserve(max: number, round = false): SlotReservation | null {
    const size = Math.min(max, this.free);
    if (size <= 0) return null;
    this.reserved += size;
    if (round) this.roundReserved += size;
    return this.reservation(size, null, (n) => {
      this.reserved -= n;
      if (round) this.roundReserved -= n;
    });
  }

  /** The slot of held attempt `attemptId` (its result is committing) for a refill
   * (dispatch/refill.ts), when the session takes new work now and is within its capacity. The
   * attempt keeps its slot — counted — until the reservation's commit, so no claim round or
   * hand-off can fill it in between. Null otherwise (one reservation per slot). */
  reserveFreed(attemptId: string): SlotReservation | null {
    if (!this.takesWork() || !this.attempts.has(attemptId) || this.reusing.has(attemptId)) return null;
    if (this.attempts.size + this.reserved > this.capacity) return null;
    this.reusing.add(attemptId);
    return this.reservation(1, attemptId, () => void this.reusing.delete(attemptId));
  }

  /** A reservation whose end happens once, by commit or release; `unreserve(n)` gives back n of
   * its slots (all of them at its end, the excess at a shrink). */
  private reservation(size: number, replaces: string | null, unreserve: (n: number) => void): SlotReservation {
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
      replaces,
      shrink: (to) => {
        const excess = size - Math.max(0, to);
        if (!open || replaces || excess <= 0) return;
        size -= excess;
        unreserve(excess);
      },
      commit: (assignments) => {
        if (!end()) throw new Error('slot reservation committed after it ended');
        if (replaces) this.attempts.delete(replaces);
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

  /** A result of `attemptId` committed without a refill: its slot is free. */
  finish(attemptId: string): void {
    this.attempts.delete(attemptId);
  }

  /** The session no longer holds `attemptId` (lease lost, revoked, finished elsewhere); true when
   * that freed a slot. An attempt whose slot a refill's reservation takes over leaves at that
   * commit, not before: freed here (the reconciler sees it finished in the database first), its
   * slot could go to a claim round and the refill's task would find no room. */
  drop(attemptId: string): boolean {
    if (this.reusing.has(attemptId)) return false;
    return this.attempts.delete(attemptId);
  }
}
