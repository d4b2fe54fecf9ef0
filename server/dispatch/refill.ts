// Refill in the result transaction: a result that frees an unkeyed attempt's slot claims the next
// task of the same queue for the same session in the same transaction, so a busy queue turns over
// in one commit instead of a result commit, a wake-up and a claim round (issue 10: "a result batch
// that frees capacity claims for that session in the same transaction").
//
// It is the claim transaction of dispatch.md narrowed to one session and one queue:
//   - the candidates are the claim's (the same UNION ALL read: WAITING, due, undeadlined, the
//     session's handlers, keyed ones only with a free key — before LIMIT), locked by primary key
//     with SKIP LOCKED, after the result rows (the lock order of a claim: task rows, keys, queues,
//     application);
//   - only unkeyed candidates are taken. The walk stops at the first keyed candidate (its key is
//     free): that one needs a key grant, so the slot is left to the claim round the result wakes,
//     and a keyed task is never passed over by unkeyed ones behind it;
//   - the permits do not move: the new attempt takes back the queue and application permits the
//     finished one released (PermitLedger.refill), and the queue row is checked under its lock at
//     the flush (not paused, not retired, within its limit) — HandoffRefused otherwise, and the
//     batch runs again without refills.
// A result whose slot was refilled frees no permit, so it wakes no claim round.
import type { Conn } from '../db/pool.js';
import { candidateIds, lockCandidates, type CandidateSpec } from '../db/claim-sql.js';
import { newId } from '../ids.js';
import type { ClaimSession } from './claim.js';
import type { HandoffHost, HandoffPlan, Reservation } from './handoff.js';
import type { PermitLedger } from './ledger.js';

/** An accepted result of an unkeyed attempt: the slot it frees. */
export interface FreedSlot {
  sessionId: string;
  namespaceId: string;
  applicationId: string;
  queueId: string;
  attemptId: string;
}

/** Plans the refills of a batch's freed slots and records them in the ledger. `skipQueues`:
 * queues a recent batch found refusing (paused or retired), not tried again for a while.
 * Reservations made are pushed to `reserved` (the caller undoes the unused ones). */
export async function planRefills(
  c: Conn,
  host: HandoffHost,
  ledger: PermitLedger,
  freed: FreedSlot[],
  now: string,
  reserved: Reservation[],
  skipQueues: ReadonlySet<string> = new Set(),
  /** Called for a queue whose candidate read found nothing (QueueHints.markDrained). */
  drained: (queueId: string) => void = () => {},
): Promise<HandoffPlan[]> {
  // Per session and queue, the slots its results free whose reuse the session accepts now.
  const groups = new Map<string, { slot: FreedSlot; olds: string[]; session: ClaimSession }>();
  for (const f of freed) {
    if (skipQueues.has(f.queueId)) continue;
    const s = host.reserveFreed(f.sessionId, f.attemptId);
    if (!s) continue;
    reserved.push({ sessionId: f.sessionId, attemptId: f.attemptId });
    if (s.namespaceId !== f.namespaceId || !s.queueIds.includes(f.queueId)) continue;
    const k = `${f.sessionId}/${f.queueId}`;
    const g = groups.get(k) ?? { slot: f, olds: [], session: s };
    g.olds.push(f.attemptId);
    groups.set(k, g);
  }
  const want = [...groups.values()].map((g) => ({ g, session: g.session, n: g.olds.length }));
  if (want.length === 0) return [];
  const specs: CandidateSpec[] = want.map((w) => ({
    queueId: w.g.slot.queueId,
    namespaceId: w.g.slot.namespaceId,
    // One more than needed: a row another claimer holds is skipped when locking.
    limit: w.n + 2,
    handlers: w.session.handlers,
    keyed: w.session.concurrencyKeys,
  }));
  const ids = await candidateIds(c, specs, now);
  for (const [i, s] of specs.entries()) if (!ids.some((x) => x.spec === i)) drained(s.queueId);
  if (ids.length === 0) return [];
  const rows = new Map((await lockCandidates(c, [...new Set(ids.map((x) => x.id))])).map((r) => [r.id, r]));
  const plans: HandoffPlan[] = [];
  const taken = new Set<string>();
  want.forEach((w, spec) => {
    const mine = ids.filter((x) => x.spec === spec).sort((a, b) => b.priority - a.priority || (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
    const olds = [...w.g.olds];
    let left = w.n;
    for (const x of mine) {
      if (left === 0) break;
      const row = rows.get(x.id);
      if (!row) continue; // locked by another claimer, or no longer WAITING
      if (row.concurrency_key) break; // a free key first: the claim round grants it
      if (taken.has(row.id)) continue;
      taken.add(row.id);
      const old = olds.shift()!;
      plans.push({ oldAttemptId: old, newAttemptId: newId(), row, session: w.session, keyed: false });
      ledger.refill(row.queue_id, w.session.applicationId);
      left--;
    }
  });
  return plans;
}
