// The one owner of a session's slots: its capacity and held attempts. The counts are private, so no
// caller can leave them inconsistent.
import type { Assignment } from '../dispatch/grant.js';

export class SessionSlots {
  capacity = 0;
  private readonly attempts = new Map<string, string>();

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

  private get room(): number {
    return Math.max(0, this.capacity - this.attempts.size);
  }

  /** A claim round committed `assignments`: they become held, as many as the capacity allows now (a
   * capacity frame may have lowered it meanwhile). Returns those held; the rest have no slot (the
   * caller releases their attempts). The rounds in flight ask together for no more than `free`
   * (gateway/dispatcher.ts). */
  take(assignments: readonly Assignment[]): Assignment[] {
    const kept = assignments.slice(0, this.room);
    for (const a of kept) this.attempts.set(a.attemptId, a.queueId);
    return kept;
  }

  resume(attempts: readonly { attempt_id: string; queueId: string }[]): void {
    for (const a of attempts) this.attempts.set(a.attempt_id, a.queueId);
  }

  /** True when that freed a slot. */
  drop(attemptId: string): boolean {
    return this.attempts.delete(attemptId);
  }
}
