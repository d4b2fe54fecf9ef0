// A session's slot accounting: its capacity, the attempts it holds, the slots promised to claim
// rounds and key hand-offs whose transactions have not committed (`reserved`), and the held
// attempts whose slot a committing refill takes over (`reusing`). Session extends it; the
// dispatcher (claim rounds), the gateway's handoffHost (hand-offs, refills) and Session itself
// (results, deliveries) keep these counts through the methods here.
export abstract class SessionSlots {
  capacity = 0;
  /** Attempts (LEASED/RUNNING) bound to this session, with their queue: capacity accounting,
   * cancel delivery, and the lease length of a start. */
  readonly held = new Map<string, string>();
  /** Slots promised to claim rounds and key hand-offs whose transactions have not committed. */
  private reserved = 0;
  /** Of `reserved`, the slots held by a claim round in flight (Dispatcher.round). */
  private roundReserved = 0;
  /** Held attempts whose slot a committing refill takes over (reuseSlot / swap). */
  private readonly reusing = new Set<string>();

  /** Whether the session takes new work now (open, socket open, worker answering its pings). */
  protected abstract takesWork(): boolean;

  /** Holds `n` slots for a claim round (`round`) or a key hand-off until its transaction ends. */
  reserve(n: number, round = false): void {
    this.reserved += n;
    if (round) this.roundReserved += n;
  }

  /** Gives back slots of reserve() (an unused reservation, or one that became held attempts). */
  unreserve(n: number, round = false): void {
    this.reserved = Math.max(0, this.reserved - n);
    if (round) this.roundReserved = Math.max(0, this.roundReserved - n);
  }

  /** Slots for new assignments. None while the worker does not answer its pings (liveness.ts): a
   * worker process that is stopped (SIGSTOP, a debugger, a frozen VM) would otherwise keep
   * receiving tasks until it misses two pongs (~30 s) and sit on them until their leases run out. */
  get free(): number {
    if (!this.takesWork()) return 0;
    return this.room;
  }

  /** Slots neither held nor reserved, whether or not the session takes work now. */
  protected get room(): number {
    return Math.max(0, this.capacity - this.held.size - this.reserved);
  }

  /** No slot left but those a claim round in flight holds. */
  protected get fullButForRound(): boolean {
    return this.capacity - this.held.size - (this.reserved - this.roundReserved) <= 0;
  }

  /** Promises the slot of held attempt `attemptId` (its result is committing) to a refill
   * (dispatch/refill.ts): true when the session takes new work now and is within its capacity.
   * The attempt stays in `held` — its slot counted — until swap(), so no claim round or hand-off
   * can fill that slot in between. */
  reuseSlot(attemptId: string): boolean {
    if (!this.takesWork() || !this.held.has(attemptId) || this.reusing.has(attemptId)) return false;
    if (this.held.size + this.reserved > this.capacity) return false;
    this.reusing.add(attemptId);
    return true;
  }

  /** A reuseSlot() promise that was not used (no candidate, or the transaction failed). */
  releaseSlot(attemptId: string): void {
    this.reusing.delete(attemptId);
  }

  /** A committed refill's old attempt leaves its slot (Session.swap delivers the new one). */
  protected vacate(attemptId: string): void {
    this.reusing.delete(attemptId);
    this.held.delete(attemptId);
  }

  /** Whether a committing refill takes over this attempt's slot. */
  protected isReusing(attemptId: string): boolean {
    return this.reusing.has(attemptId);
  }
}
