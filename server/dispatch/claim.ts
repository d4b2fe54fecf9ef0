// The claim transaction of dispatch.md, as one round for every session of one application on this
// node (the node's dispatcher runs one round per application per wake-up, not one per session):
//   1. candidates: WAITING, due, matching handlers and capability, key not held — filtered before
//      LIMIT — for every queue the sessions consume, in one UNION ALL read, then locked by primary
//      key with SKIP LOCKED;
//   2. each candidate goes to a session (round-robin among the sessions that consume its queue,
//      accept its handler and, for a keyed task, declared the capability), within the permits the
//      hint read found free; a second candidate of a key in the round stays WAITING;
//   3. keys in key order (one conditional UPDATE for all), a candidate whose key was taken
//      meanwhile stays WAITING;
//   4. attempts inserted, tasks LEASED;
//   5. queue and application permits last, as conditional updates: if one does not apply (a
//      concurrent claim on another node took the last permits, the queue was paused or retired),
//      the round rolls back and runs again on fresh hints.
// Lock order: candidate rows, resource keys (by key bytes), queues (by id), the application —
// the order of every ledger flush — so claims, results, cancels and the sweeper never deadlock
// on these rows. Frames are sent only after commit.
import type { Logger } from 'pino';
import type { AssignedTask } from '@orbit/protocol/frames';
import { lockLiveCredentialsWithClock } from '../db/credentials.js';
import { toIso, withTransaction, type Pool } from '../db/pool.js';
import {
  byClaimOrder,
  candidateIds,
  grantKeys,
  insertAttempts,
  lockCandidates,
  markTasksLeased,
  permitHints,
  takeApplicationPermits,
  takeQueuePermits,
  type CandidateRow,
  type CandidateSpec,
  type NewAttempt,
  type PermitHint,
} from '../db/claim-sql.js';
import { taskWorkflowRef } from '../db/tasks.js';
import { newId } from '../ids.js';
import { dbTimeToMs, msToDbTime } from '../db/time.js';

export interface ClaimSession {
  namespaceId: string;
  applicationId: string;
  workerId: string;
  sessionId: string;
  /** Checked (share-locked) inside the claim transaction: a revoked credential gets nothing. */
  credentialId: string;
  queueIds: string[];
  handlers: { handler: string; versions: string[] }[] | null;
  concurrencyKeys: boolean;
}

export interface Assignment {
  attemptId: string;
  attemptNo: number;
  leaseExpiresAt: string;
  queueId: string;
  concurrencyToken: string | null;
  /** The task of the task.assign frame but its payload, which is `payloadJson`. */
  task: Omit<AssignedTask, 'payload'>;
  /** The payload as stored (JSON text): spliced into the frame as it is (Session.deliver), not
   * parsed and serialized again for every assignment (issue 19). */
  payloadJson: string;
}

/** A payload column as JSON text (MariaDB returns the JSON column as text; a driver that parsed it
 * gets it serialized once). */
export function payloadText(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

export interface ClaimRequest {
  session: ClaimSession;
  /** Free slots of the session (at most this many assignments). */
  free: number;
}

export interface ClaimRoundResult {
  bySession: Map<string, Assignment[]>;
  /** Sessions whose credential the transaction found revoked. */
  revoked: Set<string>;
}

/** Rolls the round back: a conditional permit update did not apply. */
class PermitsMoved extends Error {}

const accepts = (s: ClaimSession, row: CandidateRow) =>
  s.queueIds.includes(row.queue_id) &&
  (row.concurrency_key === null || s.concurrencyKeys) &&
  (s.handlers === null || s.handlers.some((h) => h.handler === row.handler && h.versions.includes(row.handler_version)));

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

export async function claimRound(pool: Pool, reqs: ClaimRequest[], log: Logger, onExhausted: () => void = () => {}): Promise<ClaimRoundResult> {
  const out: ClaimRoundResult = { bySession: new Map(), revoked: new Set() };
  const applicationId = reqs[0]?.session.applicationId;
  if (!applicationId) return out;
  const exhausted: { ns: string; key: string; last: boolean }[] = [];
  const reportExhausted = () => {
    for (const e of exhausted) {
      log.error(
        { namespace_id: e.ns, concurrency_key: e.key },
        e.last ? 'resource key granted its last token (2^64-1); further claims are refused' : 'resource key token space exhausted; claim refused',
      );
      onExhausted();
    }
  };
  for (let round = 0; round < 3; round++) {
    // Only queues that can grant a permit now supply candidates, so the backlog of a paused or full
    // queue never fills the LIMIT and hides another queue's tasks.
    const { queues, appFree } = await permitHints(pool, applicationId, [...new Set(reqs.flatMap((r) => r.session.queueIds))]);
    if (queues.length === 0 || appFree <= 0) return out;
    try {
      await withTransaction(pool, 'claim', async (c) => {
        out.bySession = new Map();
        out.revoked = new Set();
        exhausted.length = 0;
        const { live, now } = await lockLiveCredentialsWithClock(c, [...new Set(reqs.map((r) => r.session.credentialId))]);
        for (const r of reqs) if (!live.has(r.session.credentialId)) out.revoked.add(r.session.sessionId);
        const active = reqs.filter((r) => live.has(r.session.credentialId) && r.free > 0);
        const specs = specsFor(active, queues);
        if (specs.length === 0) return;
        const ids = await candidateIds(c, specs, now);
        if (ids.length === 0) return;
        ids.sort(byClaimOrder);
        const order = new Map(ids.map((x, i) => [x.id, i]));
        const rows = (
          await lockCandidates(
            c,
            ids.slice(0, 512).map((x) => x.id),
          )
        ).sort((a, b) => order.get(a.id)! - order.get(b.id)!);

        // Step 2: candidates to sessions within the hinted permits.
        const queueFree = new Map(queues.map((q) => [q.id, q.free]));
        const lease = new Map(queues.map((q) => [q.id, q.lease_seconds]));
        const left = new Map(active.map((r) => [r.session.sessionId, r.free]));
        let appLeft = appFree;
        let turn = 0;
        const keysInRound = new Set<string>();
        const chosen: { row: CandidateRow; s: ClaimSession; attemptId: string; token: string | null }[] = [];
        for (const row of rows) {
          if (appLeft <= 0) break;
          if ((queueFree.get(row.queue_id) ?? 0) <= 0) continue;
          const k = row.concurrency_key ? `${row.namespace_id}/${row.concurrency_key.toString('hex')}` : null;
          if (k && keysInRound.has(k)) continue;
          const eligible = active.filter((r) => (left.get(r.session.sessionId) ?? 0) > 0 && accepts(r.session, row));
          if (eligible.length === 0) continue;
          const r = eligible[turn++ % eligible.length]!;
          if (k) keysInRound.add(k);
          left.set(r.session.sessionId, left.get(r.session.sessionId)! - 1);
          queueFree.set(row.queue_id, queueFree.get(row.queue_id)! - 1);
          appLeft--;
          chosen.push({ row, s: r.session, attemptId: newId(), token: null });
        }

        // Step 3: keys, per namespace, in key-byte order. Lease times start at the database
        // clock read with the last grant's tokens when the round took any key: a grant may have
        // waited for the previous holder's release to commit, and a lease must not start before
        // that (the clock read at the round's start could be earlier than the previous holder's
        // finished_at).
        let grantedAt = now;
        const dropped = new Set<string>();
        const byNs = new Map<string, typeof chosen>();
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
            // The last token was granted, or a key is exhausted: reported after the commit only
            // (a retried or rolled-back round would otherwise log and count it twice, or for a
            // grant that never happened).
            if (g.exhausted) exhausted.push({ ns, key: x.row.concurrency_key!.toString('utf8'), last: g.token !== null });
            if (g.token === null) dropped.add(x.attemptId);
            else x.token = g.token;
          }
        }
        const granted = chosen.filter((x) => !dropped.has(x.attemptId));
        if (granted.length === 0) return;

        // Step 4: attempts and tasks, lease times from the database clock (grantedAt, step 3).
        const nowMs = dbTimeToMs(grantedAt);
        const attempts: NewAttempt[] = granted.map((x) => ({
          id: x.attemptId,
          taskId: x.row.id,
          namespaceId: x.row.namespace_id,
          applicationId,
          queueId: x.row.queue_id,
          attemptNo: x.row.attempts_created + 1,
          workerId: x.s.workerId,
          sessionId: x.s.sessionId,
          concurrencyKey: x.row.concurrency_key,
          token: x.token,
          leasedAt: grantedAt,
          leaseExpiresAt: msToDbTime(nowMs + lease.get(x.row.queue_id)! * 1000),
        }));
        await insertAttempts(c, attempts);
        await markTasksLeased(
          c,
          granted.map((x) => ({ taskId: x.row.id, attemptId: x.attemptId, waiting: x.row })),
          grantedAt,
        );

        // Step 5: the hot rows, last.
        const perQueue = new Map<string, number>();
        for (const x of granted) perQueue.set(x.row.queue_id, (perQueue.get(x.row.queue_id) ?? 0) + 1);
        if (!(await takeQueuePermits(c, [...perQueue]))) throw new PermitsMoved();
        if (!(await takeApplicationPermits(c, applicationId, granted.length))) throw new PermitsMoved();

        granted.forEach((x, i) => {
          const a = attempts[i]!;
          const task: Assignment['task'] = {
            id: x.row.id,
            queue_id: x.row.queue_id,
            handler: x.row.handler,
            handler_version: x.row.handler_version,
            payload_version: x.row.payload_version,
            priority: x.row.priority,
            deadline_at: toIso(x.row.deadline_at)!,
          };
          if (x.row.business_key !== null) task.business_key = x.row.business_key;
          if (x.row.concurrency_key) task.concurrency_key = x.row.concurrency_key.toString('utf8');
          const wf = taskWorkflowRef(x.row);
          if (wf) task.workflow = wf;
          const list = out.bySession.get(x.s.sessionId) ?? [];
          list.push({
            attemptId: a.id,
            attemptNo: a.attemptNo,
            leaseExpiresAt: toIso(a.leaseExpiresAt)!,
            queueId: a.queueId,
            concurrencyToken: x.token,
            task,
            payloadJson: payloadText(x.row.payload),
          });
          out.bySession.set(x.s.sessionId, list);
        });
      });
      reportExhausted();
      return out;
    } catch (err) {
      if (!(err instanceof PermitsMoved)) throw err;
      // Another claim took the last permits (or the queue was paused or retired) between the hint
      // and the update: nothing was granted; run again on fresh hints.
    }
  }
  return { bySession: new Map(), revoked: out.revoked };
}
