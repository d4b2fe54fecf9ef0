// Key hand-off: when a result releases a resource key, the key goes in the same transaction to
// the next WAITING task of that key in the same queue (read and locked in one statement), for a
// local session that takes it — holder
// swapped and highest_token + 1 under the key row's lock (in the ledger's key phase), the attempt
// inserted, the task LEASED, and task.assign sent after the commit. A hot key then turns over in
// one commit plus the worker's round trip, instead of a result commit, a claim commit and the
// claim's wake-up. The permits do not move: the new attempt takes back, in the same queue, the
// queue and application permits the released one gave up; the queue row (not paused, not retired,
// within its limit) and the application row (within its limit, which may have been lowered) are
// still checked under their locks at the end of the transaction (HandoffRefused otherwise).
// Exclusion is the claim's: the swap is conditional on the released attempt being the holder and
// the key not being exhausted, and a task already locked by a claim is skipped.
import type { Tx } from '../db/pool.js';
import { byClaimOrder, lockKeySuccessorsSql, type CandidateRow } from '../db/claim-sql.js';
import { lockKeyRowsSql, type LockedKeyRow } from '../db/ledger-sql.js';
import { queryAll } from '../db/pipeline.js';
import { lockLiveCredentialsWithClock } from '../db/credentials.js';
import { queueConfigs } from '../db/queue-config.js';
import { newId } from '../ids.js';
import { leaseCandidates, type Assignment, type ClaimSession, type TaskToAccept } from './grant.js';
import type { PermitLedger } from './ledger.js';
import type { SlotReservation } from './slot-reservation.js';

/** A local session with a slot reserved for a grant of this transaction. */
export interface ReservedSession {
  session: ClaimSession;
  slot: SlotReservation;
}

/** What the gateway offers: local sessions that can take a task now, each with its slot reserved
 * (gateway/session-slots.ts). The transaction's owner (frame-committer.ts) releases every
 * reservation that no delivery carries. */
export interface HandoffHost {
  /** A session that accepts this task now (grant.ts sessionAccepts), with one slot reserved for
   * it; null when none. */
  reserve(t: TaskToAccept): ReservedSession | null;
  /** The slot of the session's attempt `attemptId`, whose result is committing in this batch,
   * reserved for a refill (refill.ts) when the session takes new work now and is within its
   * capacity; null otherwise. The slot stays counted as held until the reservation's commit, so
   * no claim round can take it meanwhile. */
  reserveFreed(sessionId: string, attemptId: string): ReservedSession | null;
  /** After the commit: the task.assign frame (the delivery's reservation commits). */
  deliver(d: Delivery): void;
}

export interface ReleasedKey {
  namespaceId: string;
  applicationId: string;
  queueId: string;
  key: Buffer;
  attemptId: string;
}

export interface HandoffPlan extends ReservedSession {
  oldAttemptId: string;
  newAttemptId: string;
  row: CandidateRow;
  /** true: a key hand-off (applied only when its swap did); false: an unkeyed refill of the slot
   * `oldAttemptId` freed in the same session (refill.ts), always applied. */
  keyed: boolean;
}

/** A committed hand-off or refill: delivered to its session after the commit. */
export interface Delivery extends ReservedSession {
  a: Assignment;
  /** The finished attempt whose key (a hand-off) or slot (a refill: slot.replaces) it took. */
  follows: string;
}

/** Picks the successor of each released key (before the ledger flush) and records the swaps in
 * the ledger. A plan carries its session's slot reservation (an unused one is released by the
 * transaction's owner, frame-committer.ts). */
export async function planHandoffs(
  c: Tx,
  host: HandoffHost,
  ledger: PermitLedger,
  released: ReleasedKey[],
  now: string,
  liveCredentials: Set<string>,
): Promise<HandoffPlan[]> {
  if (released.length === 0) return [];
  // One round trip: the successors read and locked in one statement (SKIP LOCKED: a task a claim
  // holds is skipped), then the released keys' rows locked in key order — under that lock the
  // ledger knows which swaps apply and their tokens without reading them back after the swap
  // (ledger.ts flushKeys). The successors' read comes before the keys but never waits (SKIP
  // LOCKED), so it cannot close a cycle with design.md's lock order (keys before waiting rows);
  // test/waiting-heads.test.ts "a cancel and the key holder's retry at once" runs it beside a cancel.
  const byNs = new Map<string, Buffer[]>();
  for (const r of released) byNs.set(r.namespaceId, [...(byNs.get(r.namespaceId) ?? []), r.key]);
  const namespaces = [...byNs.keys()].sort();
  const [successors, ...keyRows] = await queryAll(c, [lockKeySuccessorsSql(released, now), ...namespaces.map((ns) => lockKeyRowsSql(ns, byNs.get(ns)!))]);
  namespaces.forEach((ns, i) => ledger.keyRowsLocked(ns, keyRows[i]![0] as LockedKeyRow[]));
  const rows = successors![0] as CandidateRow[];
  if (rows.length === 0) return [];
  const plans: HandoffPlan[] = [];
  const taken = new Set<string>();
  for (const r of released) {
    const next = rows
      .filter((t) => !taken.has(t.id) && t.namespace_id === r.namespaceId && t.queue_id === r.queueId && t.concurrency_key?.equals(r.key))
      .sort(byClaimOrder)[0];
    if (!next) continue;
    const to = host.reserve({ namespaceId: r.namespaceId, queueId: r.queueId, handler: next.handler, handlerVersion: next.handler_version, keyed: true });
    if (!to) continue;
    taken.add(next.id);
    plans.push({ ...to, oldAttemptId: r.attemptId, newAttemptId: newId(), row: next, keyed: true });
  }
  // A session of another credential than the batch's: its credential is checked like a claim's.
  const others = [...new Set(plans.map((p) => p.session.credentialId).filter((id) => !liveCredentials.has(id)))];
  const live = others.length ? (await lockLiveCredentialsWithClock(c, others)).live : new Set<string>();
  const kept = plans.filter((p) => liveCredentials.has(p.session.credentialId) || live.has(p.session.credentialId));
  for (const p of kept) ledger.handOff(p.oldAttemptId, p.newAttemptId, p.row.queue_id, p.session.applicationId);
  return kept;
}

/** After the ledger's key phase: the attempts of the hand-offs whose swap applied and of the
 * refills, and their tasks LEASED. Returns what to deliver after the commit (a hand-off whose swap
 * did not apply delivers nothing: its reservation is released with the unused ones). */
export async function completeHandoffs(c: Tx, ledger: PermitLedger, plans: HandoffPlan[], now: string): Promise<Delivery[]> {
  const applied = plans.filter((p) => !p.keyed || ledger.handoffTokens.has(p.newAttemptId));
  if (applied.length === 0) return [];
  const lease = await queueConfigs(
    c,
    applied.map((p) => p.row.queue_id),
  );
  const assignments = await leaseCandidates(
    c,
    applied.map((p) => ({ row: p.row, session: p.session, attemptId: p.newAttemptId, token: p.keyed ? ledger.handoffTokens.get(p.newAttemptId)! : null })),
    now,
    (q) => lease.get(q)!.leaseSeconds,
  );
  return applied.map((p, i) => ({ session: p.session, slot: p.slot, a: assignments[i]!, follows: p.oldAttemptId }));
}
