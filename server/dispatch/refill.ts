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
import { byClaimOrder, candidateIds, lockCandidates, type CandidateRow, type CandidateSpec } from '../db/claim-sql.js';
import { newId } from '../ids.js';
import type { ClaimSession } from './grant.js';
import type { HandoffHost, HandoffPlan } from './handoff.js';
import type { PermitLedger } from './ledger.js';
import type { QueueHints } from './queue-hints.js';
import type { SlotReservation } from './slot-reservation.js';

/** An accepted result of an unkeyed attempt: the slot it frees. */
export interface FreedSlot {
  sessionId: string;
  namespaceId: string;
  applicationId: string;
  queueId: string;
  attemptId: string;
}

/** The freed slots of one session in one queue, each reserved for a refill (oldest result first). */
interface RefillGroup {
  queueId: string;
  namespaceId: string;
  session: ClaimSession;
  slots: SlotReservation[];
}

/** A candidate as candidateIds read it: `spec` is its group's index. */
type CandidateId = { id: string; priority: number; seq: bigint | string; spec: number };

/** The refill walk: per group (in order), its candidates in claim order, each free unkeyed one
 * taking the group's next freed slot. A candidate not locked (`rows` lacks it: another claimer
 * holds it, or it left WAITING) or taken by an earlier group is passed over; the walk of a group
 * stops at its first keyed candidate (a free key is the claim round's to grant, and a keyed task
 * is never passed over by unkeyed ones behind it) or when its slots run out. */
export function walkRefills<S, R extends { id: string; concurrency_key: unknown }>(
  groups: readonly { slots: readonly S[] }[],
  ids: readonly CandidateId[],
  rows: ReadonlyMap<string, R>,
): { group: number; slot: S; row: R }[] {
  const picks: { group: number; slot: S; row: R }[] = [];
  const taken = new Set<string>();
  groups.forEach((g, group) => {
    const slots = [...g.slots];
    for (const x of ids.filter((x) => x.spec === group).sort(byClaimOrder)) {
      if (slots.length === 0) break;
      const row = rows.get(x.id);
      if (!row) continue;
      if (row.concurrency_key) break;
      if (taken.has(row.id)) continue;
      taken.add(row.id);
      picks.push({ group, slot: slots.shift()!, row });
    }
  });
  return picks;
}

/** Plans the refills of a batch's freed slots and records them in the ledger, skipping the
 * queues `hints` marks refused or drained (and marking a queue drained when its read finds
 * nothing). A plan carries its slot's reservation (an unused one is released by the
 * transaction's owner, frame-committer.ts). */
export async function planRefills(c: Tx, host: HandoffHost, ledger: PermitLedger, freed: FreedSlot[], now: string, hints: QueueHints): Promise<HandoffPlan[]> {
  const skip = hints.refillSkips();
  // Per session and queue: the session's descriptor and the slots its results free whose reuse it
  // accepts now (oldest result first).
  const groups = new Map<string, RefillGroup>();
  for (const f of freed) {
    if (skip.has(f.queueId)) continue;
    const to = host.reserveFreed(f.sessionId, f.attemptId);
    if (!to) continue;
    if (to.session.namespaceId !== f.namespaceId || !to.session.queueIds.includes(f.queueId)) continue;
    const k = `${f.sessionId}/${f.queueId}`;
    const g = groups.get(k) ?? { queueId: f.queueId, namespaceId: f.namespaceId, session: to.session, slots: [] };
    g.slots.push(to.slot);
    groups.set(k, g);
  }
  const want = [...groups.values()];
  if (want.length === 0) return [];
  const specs: CandidateSpec[] = want.map((g) => ({
    queueId: g.queueId,
    namespaceId: g.namespaceId,
    // Two more than needed: rows another claimer holds are skipped when locking.
    limit: g.slots.length + 2,
    handlers: g.session.handlers,
    keyed: g.session.concurrencyKeys,
  }));
  const ids = await candidateIds(c, specs, now);
  for (const [i, s] of specs.entries()) if (!ids.some((x) => x.spec === i)) hints.markDrained(s.queueId);
  if (ids.length === 0) return [];
  const rows = new Map<string, CandidateRow>((await lockCandidates(c, [...new Set(ids.map((x) => x.id))])).map((r) => [r.id, r]));
  return walkRefills(want, ids, rows).map(({ group, slot, row }) => {
    const session = want[group]!.session;
    ledger.refill(row.queue_id, session.applicationId);
    return { session, slot, oldAttemptId: slot.replaces!, newAttemptId: newId(), row, keyed: false };
  });
}
