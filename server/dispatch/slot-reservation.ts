// A session's slots promised to a claim round whose transaction has not committed yet. The
// gateway's slot accounting makes them (gateway/session-slots.ts); the claim round only carries
// them to its delivery. A reservation ends once, by commit() or release().
import type { Assignment } from './grant.js';

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
