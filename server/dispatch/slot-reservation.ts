// A session's slots promised to a grant whose transaction has not committed yet: a claim round's,
// a key hand-off's, or a refill's (the slot of an attempt whose result commits in the same
// transaction). The gateway's slot accounting makes them (gateway/session-slots.ts); the claim
// round, the hand-off and the refill only carry them to their delivery. A reservation ends once,
// by commit() or release(): nothing else changes what a session has reserved.
import type { Assignment } from './grant.js';

export interface SlotReservation {
  /** Slots it holds (a refill's: the one of `replaces`). */
  readonly size: number;
  /** A refill's: the held attempt whose slot it takes; null for a claim round's or a hand-off's. */
  readonly replaces: string | null;
  /** The grant committed: its reserved slots become `assignments`' attempts (and a refill's old
   * attempt leaves its slot), as many as the session's capacity allows now — a capacity frame may
   * have lowered it meanwhile. Returns the assignments now held; the rest have no slot (the
   * caller releases their attempts). Ends the reservation; a second commit is a bug (throws). */
  commit(assignments: readonly Assignment[]): Assignment[];
  /** A claim round's: it read its candidates and cannot fill more than `to` of its slots; the
   * rest are free again at once (so a round for work woken after that read can reserve them while
   * this one commits). Never grows; does nothing for a refill's or once the reservation ended. */
  shrink(to: number): void;
  /** The grant did not happen (nothing to grant, rolled back, retried, refused): its slots are
   * free again, a refill's attempt keeps its slot. Does nothing once the reservation ended. */
  release(): void;
}
