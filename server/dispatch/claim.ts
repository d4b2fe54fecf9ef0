// The claim transaction (docs/design.md "The claim"), one round for the sessions of one application
// on this node: permit hints and credentials with the clock, candidates locked SKIP LOCKED, dealt
// round-robin, keys granted in key order, attempts inserted, permits taken last as conditional
// updates with the COMMIT (a refusal reruns the round). Lock order: candidates, keys, queues, the
// application — the order of every ledger flush.
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
import { leaseCandidates, sessionAccepts, type Assignment, type ClaimSession, type Grant } from './grant.js';
import { groupBy } from '../group-by.js';

/** The most tasks one round grants one session, and the most candidate rows it reads whole (bounds
 * the payloads in memory): a worker draining a backlog is filled by one round, not by many. */
export const ROUND_MAX_PER_SESSION = 512;

export interface ClaimRequest {
  session: ClaimSession;
  free: number;
}

export interface ClaimRoundResult {
  bySession: Map<string, Assignment[]>;
  revoked: Set<string>;
}

/** Reported after the commit, so a retried round never reports it twice. */
interface Exhausted {
  ns: string;
  key: string;
  last: boolean;
}

export function specsFor(reqs: ClaimRequest[], hints: PermitHint[]): CandidateSpec[] {
  const specs: CandidateSpec[] = [];
  for (const q of hints) {
    const on = reqs.filter((r) => r.session.queueIds.includes(q.id) && r.session.namespaceId === q.namespace_id);
    let demand = 0;
    for (const r of on) demand += r.free;
    demand = Math.min(q.free, demand);
    if (demand <= 0) continue;
    const anyFilterless = on.some((r) => r.session.handlers === null);
    const handlers = new Map<string, Set<string>>();
    if (!anyFilterless)
      for (const r of on)
        for (const h of r.session.handlers!) for (const v of h.versions) handlers.set(h.handler, (handlers.get(h.handler) ?? new Set()).add(v));
    specs.push({
      queueId: q.id,
      namespaceId: q.namespace_id,
      // Over-fetch so that rows another claimer holds do not starve the round.
      limit: Math.min(2 * ROUND_MAX_PER_SESSION, demand * 2),
      handlers: anyFilterless ? null : [...handlers].map(([handler, v]) => ({ handler, versions: [...v] })),
      keyed: on.some((r) => r.session.concurrencyKeys),
    });
  }
  return specs;
}

/** What a round reports while it runs. */
export interface RoundProgress {
  /** The candidate read is being sent; under READ COMMITTED it sees every committed submit. */
  reading(): void;
  /** The candidates it took, per session id, are locked: a round beside it reads past them. A
   * rerun takes no more for a session than this said. `keyed`: one of them has a key. */
  chosen(perSession: Map<string, number>, keyed: boolean): void;
}

export async function claimRound(
  pool: Pool,
  reqs: ClaimRequest[],
  log: Logger,
  onExhausted: () => void = () => {},
  progress: RoundProgress = { reading() {}, chosen() {} },
): Promise<ClaimRoundResult> {
  const out: ClaimRoundResult = { bySession: new Map(), revoked: new Set() };
  const applicationId = reqs[0]?.session.applicationId;
  if (!applicationId) return out;
  const exhausted: Exhausted[] = [];
  const credentialIds = [...new Set(reqs.map((r) => r.session.credentialId))];
  const queueIds = [...new Set(reqs.flatMap((r) => r.session.queueIds))];
  let cap: Map<string, number> | null = null;
  for (let round = 0; round < 3; round++) {
    try {
      await withTransaction(pool, 'claim', async (c) => {
        out.bySession = new Map();
        out.revoked = new Set();
        exhausted.length = 0;
        // Only queues that can grant now supply candidates, so a paused or full queue's backlog never
        // fills the LIMIT and hides another queue's tasks.
        const [credentials, hints] = await queryAll(c, [liveCredentialsWithClockSql(credentialIds), permitHintsSql(applicationId, queueIds)]);
        const { live, now } = liveCredentialsWithClockOf(credentials![0] as RowDataPacket[]);
        const { queues, appFree } = permitHintsOf(hints![0] as RowDataPacket[]);
        for (const r of reqs) if (!live.has(r.session.credentialId)) out.revoked.add(r.session.sessionId);
        if (queues.length === 0 || appFree <= 0) return;
        const active = reqs
          .map((r) => (cap ? { ...r, free: Math.min(r.free, cap.get(r.session.sessionId) ?? 0) } : r))
          .filter((r) => live.has(r.session.credentialId) && r.free > 0);
        const rows = await lockRoundCandidates(c, specsFor(active, queues), now, progress.reading);
        if (rows.length === 0) return;
        const chosen = toSessions(rows, active, queues, appFree);
        if (!cap) {
          cap = new Map();
          for (const g of chosen) cap.set(g.session.sessionId, (cap.get(g.session.sessionId) ?? 0) + 1);
          progress.chosen(
            cap,
            chosen.some((g) => g.row.concurrency_key !== null),
          );
        }
        const { granted, grantedAt } = await grantRoundKeys(c, chosen, now, exhausted);
        if (granted.length === 0) return;
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
      // The permits moved between hint and update (NotApplied): nothing was granted; run again.
      if (!(err instanceof NotApplied)) throw err;
    }
  }
  return { bySession: new Map(), revoked: out.revoked };
}

async function lockRoundCandidates(c: Tx, specs: CandidateSpec[], now: string, reading: () => void): Promise<CandidateRow[]> {
  if (specs.length === 0) return [];
  reading();
  const ids = await candidateIds(c, specs, now);
  if (ids.length === 0) return [];
  ids.sort(byClaimOrder);
  const order = new Map(ids.map((x, i) => [x.id, i]));
  const first = ids.slice(0, ROUND_MAX_PER_SESSION).map((x) => x.id);
  return (await lockCandidates(c, first)).sort((a, b) => order.get(a.id)! - order.get(b.id)!);
}

/** Candidates to sessions within the hinted permits, round-robin; a second candidate of a key in
 * the round stays WAITING. */
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
    const eligible = active.filter((r) => (left.get(r.session.sessionId) ?? 0) > 0 && sessionAccepts(r.session, row));
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

/** The keys of the chosen candidates, per namespace, in key-byte order; a candidate whose key is
 * taken or exhausted stays WAITING. Leases start at the clock read after the grants, since a grant
 * may have waited for the previous holder's release to commit. */
async function grantRoundKeys(c: Tx, chosen: Grant[], now: string, exhausted: Exhausted[]): Promise<{ granted: Grant[]; grantedAt: string }> {
  let grantedAt = now;
  const dropped = new Set<string>();
  const byNs = groupBy(
    chosen.filter((x) => x.row.concurrency_key),
    (x) => x.row.namespace_id,
  );
  for (const [ns, list] of [...byNs].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    list.sort((a, b) => Buffer.compare(a.row.concurrency_key!, b.row.concurrency_key!));
    const wanted = list.map((x) => ({ key: x.row.concurrency_key!, attemptId: x.attemptId }));
    const { grants: got, now: after } = await grantKeys(c, ns, wanted);
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

async function takePermitsAndCommit(c: Tx, applicationId: string, granted: Grant[]): Promise<void> {
  const perQueue = new Map<string, number>();
  for (const x of granted) perQueue.set(x.row.queue_id, (perQueue.get(x.row.queue_id) ?? 0) + 1);
  await commitIfApplied(c, [queuePermits([...perQueue]), applicationPermits(applicationId, granted.length)]);
}
