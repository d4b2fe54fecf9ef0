// The claim transaction of dispatch.md, as one round for every session of one application on this
// node (the node's dispatcher runs one round per application per wake-up, not one per session).
// The steps carry docs/design.md's numbers ("The claim"):
//   0. permit hints, read without a lock, in step 1's round trip (permitHintsSql);
//   1. the sessions' credentials (shared lock) and the database clock in one statement;
//   2–3. candidates: WAITING, due, matching handlers and capability, key not held — filtered
//      before LIMIT — for every queue the sessions consume, in one UNION ALL read, then locked by
//      primary key with SKIP LOCKED (lockRoundCandidates);
//   4. each candidate goes to a session (round-robin among the sessions that consume its queue,
//      accept its handler and, for a keyed task, declared the capability), within the permits the
//      hint read found free; a second candidate of a key in the round stays WAITING (toSessions);
//   5. keys in key order (one conditional upsert for all), a candidate whose key was taken
//      meanwhile stays WAITING (grantRoundKeys);
//   6. attempts inserted, tasks LEASED (leaseCandidates, grant.ts: shared with hand-offs and refills);
//   7. queue and application permits last, as conditional updates sent with the COMMIT in one
//      round trip (db/conditional-commit.ts): if one does not apply (a concurrent claim on another
//      node took the last permits, the queue was paused or retired), the round rolls back and runs
//      again on fresh hints (takePermitsAndCommit).
// Lock order: candidate rows, resource keys (by key bytes), queues (by id), the application —
// the order of every ledger flush — so claims, results, cancels and the sweeper never deadlock
// on these rows. Frames are sent only after commit.
import type { Logger } from 'pino';
import type { RowDataPacket } from 'mysql2/promise';
import { liveCredentialsWithClockOf, liveCredentialsWithClockSql } from '../db/credentials.js';
import { queryAll } from '../db/pipeline.js';
import { withTransaction, type Pool, type Tx } from '../db/pool.js';
import { commitIfApplied, NotApplied } from '../db/conditional-commit.js';
import {
  byClaimOrder,
  candidateIds,
  grantKeys,
  lockCandidates,
  permitHintsOf,
  permitHintsSql,
  applicationPermits,
  queuePermits,
  type CandidateRow,
  type CandidateSpec,
  type PermitHint,
} from '../db/claim-sql.js';
import { newId } from '../ids.js';
import { acceptsRow, leaseCandidates, type Assignment, type ClaimSession, type Grant } from './grant.js';

export type { Assignment, ClaimSession } from './grant.js';

export interface ClaimRequest {
  session: ClaimSession;
  /** Free slots of the session (at most this many assignments). */
  free: number;
}

/** What a round tells its caller as it goes (the dispatcher, gateway/dispatcher.ts). */
export interface RoundProgress {
  /** The candidate read is about to be sent: under READ COMMITTED it sees every task whose submit
   * committed before now, so the work of wake-ups received so far is offered to this round. */
  reading?(): void;
  /** The candidate read answered with `found` candidates: no session can be dealt more, so each
   * request's `free` has been lowered to at most `found` (also for a retried round) and the caller
   * may give the rest of its reserved slots back. */
  read?(found: number): void;
}

export interface ClaimRoundResult {
  bySession: Map<string, Assignment[]>;
  /** Sessions whose credential the transaction found revoked. */
  revoked: Set<string>;
}

/** A key whose last token was granted, or that is exhausted: reported after the commit. */
interface Exhausted {
  ns: string;
  key: string;
  last: boolean;
}

/** Rolls the round back: a conditional permit update did not apply. */
class PermitsMoved extends Error {}

/** The candidate read of each queue: the union of what its sessions accept (exported for its unit test). */
export function specsFor(reqs: ClaimRequest[], hints: PermitHint[]): CandidateSpec[] {
  const specs: CandidateSpec[] = [];
  for (const q of hints) {
    const on = reqs.filter((r) => r.session.queueIds.includes(q.id) && r.session.namespaceId === q.namespace_id);
    const demand = Math.min(
      q.free,
      on.reduce((n, r) => n + r.free, 0),
    );
    if (demand <= 0) continue;
    const anyFilterless = on.some((r) => r.session.handlers === null);
    const handlers = new Map<string, Set<string>>();
    if (!anyFilterless)
      for (const r of on)
        for (const h of r.session.handlers!) for (const v of h.versions) handlers.set(h.handler, (handlers.get(h.handler) ?? new Set()).add(v));
    specs.push({
      queueId: q.id,
      namespaceId: q.namespace_id,
      // Over-fetch so that rows another claimer holds (skipped when locking) do not starve the round.
      limit: Math.min(256, demand * 2),
      handlers: anyFilterless ? null : [...handlers].map(([handler, v]) => ({ handler, versions: [...v] })),
      keyed: on.some((r) => r.session.concurrencyKeys),
    });
  }
  return specs;
}

export async function claimRound(
  pool: Pool,
  reqs: ClaimRequest[],
  log: Logger,
  onExhausted: () => void = () => {},
  progress: RoundProgress = {},
): Promise<ClaimRoundResult> {
  const out: ClaimRoundResult = { bySession: new Map(), revoked: new Set() };
  const applicationId = reqs[0]?.session.applicationId;
  if (!applicationId) return out;
  const exhausted: Exhausted[] = [];
  const credentialIds = [...new Set(reqs.map((r) => r.session.credentialId))];
  const queueIds = [...new Set(reqs.flatMap((r) => r.session.queueIds))];
  for (let round = 0; round < 3; round++) {
    try {
      await withTransaction(pool, 'claim', async (c) => {
        out.bySession = new Map();
        out.revoked = new Set();
        exhausted.length = 0;
        // The credentials (share-locked) with the clock, and the permit hints — only queues that
        // can grant a permit now supply candidates, so the backlog of a paused or full queue never
        // fills the LIMIT and hides another queue's tasks — in the round's first round trip. The
        // hints were an autocommit read of their own before the transaction: one round trip more
        // between a wake-up and the candidate read (issue 19, docs/benchmarks.md "Where the paced
        // p99 goes"). A plain read inside the transaction sees what it saw: the last committed rows.
        const [credentials, hints] = await queryAll(c, [liveCredentialsWithClockSql(credentialIds), permitHintsSql(applicationId, queueIds)]);
        const { live, now } = liveCredentialsWithClockOf(credentials![0] as RowDataPacket[]);
        const { queues, appFree } = permitHintsOf(hints![0] as RowDataPacket[]);
        for (const r of reqs) if (!live.has(r.session.credentialId)) out.revoked.add(r.session.sessionId);
        if (queues.length === 0 || appFree <= 0) return;
        const active = reqs.filter((r) => live.has(r.session.credentialId) && r.free > 0);
        const rows = await lockRoundCandidates(c, specsFor(active, queues), now, progress, reqs);
        if (rows.length === 0) return;
        const chosen = toSessions(rows, active, queues, appFree);
        const { granted, grantedAt } = await grantRoundKeys(c, chosen, now, exhausted);
        if (granted.length === 0) return;
        // Step 4: lease times from the database clock (grantedAt, step 3).
        const lease = new Map(queues.map((q) => [q.id, q.lease_seconds]));
        const assignments = await leaseCandidates(c, granted, grantedAt, (q) => lease.get(q)!);
        await takePermitsAndCommit(c, applicationId, granted);
        granted.forEach((g, i) => {
          const list = out.bySession.get(g.session.sessionId) ?? [];
          list.push(assignments[i]!);
          out.bySession.set(g.session.sessionId, list);
        });
      });
      for (const e of exhausted) {
        log.error(
          { namespace_id: e.ns, concurrency_key: e.key },
          e.last ? 'resource key granted its last token (2^64-1); further claims are refused' : 'resource key token space exhausted; claim refused',
        );
        onExhausted();
      }
      return out;
    } catch (err) {
      if (!(err instanceof PermitsMoved)) throw err;
      // Another claim took the last permits (or the queue was paused or retired) between the hint
      // and the update: nothing was granted; run again on fresh hints.
    }
  }
  return { bySession: new Map(), revoked: out.revoked };
}

/** Step 1: the candidates of every spec in one read, in claim order, the first 512 locked by
 * primary key with SKIP LOCKED (those still WAITING, in claim order). `reqs`' free slots are
 * lowered to the number found (RoundProgress.read). */
async function lockRoundCandidates(c: Tx, specs: CandidateSpec[], now: string, progress: RoundProgress, reqs: ClaimRequest[]): Promise<CandidateRow[]> {
  if (specs.length === 0) return [];
  progress.reading?.();
  const ids = await candidateIds(c, specs, now);
  for (const r of reqs) r.free = Math.min(r.free, ids.length);
  progress.read?.(ids.length);
  if (ids.length === 0) return [];
  ids.sort(byClaimOrder);
  const order = new Map(ids.map((x, i) => [x.id, i]));
  return (
    await lockCandidates(
      c,
      ids.slice(0, 512).map((x) => x.id),
    )
  ).sort((a, b) => order.get(a.id)! - order.get(b.id)!);
}

/** Step 2: candidates to sessions within the hinted permits, round-robin among the sessions with a
 * free slot that accept the task; a second candidate of a key in the round stays WAITING. */
function toSessions(rows: CandidateRow[], active: ClaimRequest[], queues: PermitHint[], appFree: number): Grant[] {
  const queueFree = new Map(queues.map((q) => [q.id, q.free]));
  const left = new Map(active.map((r) => [r.session.sessionId, r.free]));
  let appLeft = appFree;
  let turn = 0;
  const keysInRound = new Set<string>();
  const chosen: Grant[] = [];
  for (const row of rows) {
    if (appLeft <= 0) break;
    if ((queueFree.get(row.queue_id) ?? 0) <= 0) continue;
    const k = row.concurrency_key ? `${row.namespace_id}/${row.concurrency_key.toString('hex')}` : null;
    if (k && keysInRound.has(k)) continue;
    const eligible = active.filter((r) => (left.get(r.session.sessionId) ?? 0) > 0 && acceptsRow(r.session, row));
    if (eligible.length === 0) continue;
    const r = eligible[turn++ % eligible.length]!;
    if (k) keysInRound.add(k);
    left.set(r.session.sessionId, left.get(r.session.sessionId)! - 1);
    queueFree.set(row.queue_id, queueFree.get(row.queue_id)! - 1);
    appLeft--;
    chosen.push({ row, session: r.session, attemptId: newId(), token: null });
  }
  return chosen;
}

/** Step 3: the keys of the chosen keyed candidates, per namespace, in key-byte order; a candidate
 * whose key was taken meanwhile (or is exhausted) is dropped and stays WAITING. Lease times start
 * at the database clock read with the last grant's tokens when the round took any key: a grant may
 * have waited for the previous holder's release to commit, and a lease must not start before that
 * (the clock read at the round's start could be earlier than the previous holder's finished_at).
 * Exhausted keys are pushed to `exhausted`, reported after the commit only (a retried or
 * rolled-back round would otherwise log and count them twice, or for a grant that never happened). */
async function grantRoundKeys(c: Tx, chosen: Grant[], now: string, exhausted: Exhausted[]): Promise<{ granted: Grant[]; grantedAt: string }> {
  let grantedAt = now;
  const dropped = new Set<string>();
  const byNs = new Map<string, Grant[]>();
  for (const x of chosen.filter((x) => x.row.concurrency_key)) byNs.set(x.row.namespace_id, [...(byNs.get(x.row.namespace_id) ?? []), x]);
  for (const [ns, list] of [...byNs].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    list.sort((a, b) => Buffer.compare(a.row.concurrency_key!, b.row.concurrency_key!));
    const { grants: got, now: after } = await grantKeys(
      c,
      ns,
      list.map((x) => ({ key: x.row.concurrency_key!, attemptId: x.attemptId })),
    );
    grantedAt = after;
    for (const x of list) {
      const g = got.get(x.attemptId)!;
      if (g.exhausted) exhausted.push({ ns, key: x.row.concurrency_key!.toString('utf8'), last: g.token !== null });
      if (g.token === null) dropped.add(x.attemptId);
      else x.token = g.token;
    }
  }
  return { granted: chosen.filter((x) => !dropped.has(x.attemptId)), grantedAt };
}

/** Step 5: the hot rows, last — queue permits (by id) and the application's, as conditional
 * updates sent with the COMMIT in one round trip (db/conditional-commit.ts), so that the rows are
 * locked only while the server runs that text, not across three round trips of this process;
 * PermitsMoved (the round rolls back) when one does not apply. */
async function takePermitsAndCommit(c: Tx, applicationId: string, granted: Grant[]): Promise<void> {
  const perQueue = new Map<string, number>();
  for (const x of granted) perQueue.set(x.row.queue_id, (perQueue.get(x.row.queue_id) ?? 0) + 1);
  try {
    await commitIfApplied(c, [queuePermits([...perQueue]), applicationPermits(applicationId, granted.length)]);
  } catch (err) {
    if (err instanceof NotApplied) throw new PermitsMoved();
    throw err;
  }
}
