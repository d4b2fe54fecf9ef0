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
//     the flush (not paused, not retired, within its limit), and so is the application row (within
//     its limit) — HandoffRefused otherwise, and the batch runs again without refills.
// A result whose slot was refilled frees no permit, so it wakes no claim round.
import type { Tx } from '../db/pool.js';
import { byClaimOrder, candidateIds, lockCandidates, type CandidateSpec } from '../db/claim-sql.js';
import { newId } from '../ids.js';
import type { ClaimSession } from './grant.js';
import type { HandoffHost, HandoffPlan, Reservation } from './handoff.js';
import type { PermitLedger } from './ledger.js';
import type { QueueHints } from './queue-hints.js';

/** An accepted result of an unkeyed attempt: the slot it frees. */
export interface FreedSlot {
  sessionId: string;
  namespaceId: string;
  applicationId: string;
  queueId: string;
  attemptId: string;
}

/** Plans the refills of a batch's freed slots and records them in the ledger, skipping the
 * queues `hints` marks refused or drained (and marking a queue drained when its read finds
 * nothing). Reservations made are pushed to `reserved` (the caller undoes the unused ones). */
export async function planRefills(
  c: Tx,
  host: HandoffHost,
  ledger: PermitLedger,
  freed: FreedSlot[],
  now: string,
  reserved: Reservation[],
  hints: QueueHints,
): Promise<HandoffPlan[]> {
  const skip = hints.refillSkips();
  // Per session and queue: the session's descriptor and the slots its results free whose reuse it
  // accepts now (oldest result first).
  const groups = new Map<string, { queueId: string; namespaceId: string; session: ClaimSession; olds: string[] }>();
  for (const f of freed) {
    if (skip.has(f.queueId)) continue;
    const s = host.reserveFreed(f.sessionId, f.attemptId);
    if (!s) continue;
    reserved.push({ sessionId: f.sessionId, attemptId: f.attemptId });
    if (s.namespaceId !== f.namespaceId || !s.queueIds.includes(f.queueId)) continue;
    const k = `${f.sessionId}/${f.queueId}`;
    const g = groups.get(k) ?? { queueId: f.queueId, namespaceId: f.namespaceId, session: s, olds: [] };
    g.olds.push(f.attemptId);
    groups.set(k, g);
  }
  const want = [...groups.values()];
  if (want.length === 0) return [];
  const specs: CandidateSpec[] = want.map((g) => ({
    queueId: g.queueId,
    namespaceId: g.namespaceId,
    // Two more than needed: rows another claimer holds are skipped when locking.
    limit: g.olds.length + 2,
    handlers: g.session.handlers,
    keyed: g.session.concurrencyKeys,
  }));
  const ids = await candidateIds(c, specs, now);
  for (const [i, s] of specs.entries()) if (!ids.some((x) => x.spec === i)) hints.markDrained(s.queueId);
  if (ids.length === 0) return [];
  const rows = new Map((await lockCandidates(c, [...new Set(ids.map((x) => x.id))])).map((r) => [r.id, r]));
  const plans: HandoffPlan[] = [];
  const taken = new Set<string>();
  want.forEach((g, spec) => {
    const olds = [...g.olds];
    for (const x of ids.filter((x) => x.spec === spec).sort(byClaimOrder)) {
      if (olds.length === 0) break;
      const row = rows.get(x.id);
      if (!row) continue; // locked by another claimer, or no longer WAITING
      if (row.concurrency_key) break; // a free key first: the claim round grants it
      if (taken.has(row.id)) continue;
      taken.add(row.id);
      plans.push({ oldAttemptId: olds.shift()!, newAttemptId: newId(), row, session: g.session, keyed: false });
      ledger.refill(row.queue_id, g.session.applicationId);
    }
  });
  return plans;
}
