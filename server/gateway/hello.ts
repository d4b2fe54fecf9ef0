// The hello transaction: worker identity, session row, resume of listed attempts, and release of
// unlisted never-started ones.
import { OrbitError } from '@orbit/protocol/errors';
import type { GatewayFrame, HelloFrame } from '@orbit/protocol/frames';
import type { LiveAttemptState } from '@orbit/protocol/states';
import { ID_RE } from '@orbit/protocol/validation';
import { toIso, type Pool } from '../db/pool.js';
import { lockLiveCredential, type Credential } from '../db/credentials.js';
import { canUseQueue } from '../admin/access.js';
import { lockLiveAttemptsOfWorker, readAttempts } from '../db/attempts.js';
import { rebindAttempts } from '../db/attempt-leases.js';
import { queuesInNamespace } from '../db/queues.js';
import { insertWorkerIdentity, lockWorkerIdentity, setCurrentSession } from '../db/worker-identities.js';
import { closeSupersededSessions, insertWorkerSession } from '../db/worker-sessions.js';
import { withLedgerTx, type StepAdvancer } from '../dispatch/ledger.js';
import { revokeAttempts } from '../dispatch/revoke.js';
import { queueConfigs } from '../db/queue-config.js';
import type { ClaimSession } from '../dispatch/grant.js';

export interface HelloResult {
  resumed: { attempt_id: string; state: LiveAttemptState; lease_expires_at: string; concurrency_token?: string; queueId: string }[];
  lost: string[];
  leaseMs: number;
  freedQueues: string[];
}

export function helloClaimSession(cred: Credential, sessionId: string, h: HelloFrame): ClaimSession {
  return {
    namespaceId: cred.namespaceId,
    applicationId: cred.applicationId,
    workerId: h.worker_id,
    sessionId,
    credentialId: cred.id,
    queueIds: [...new Set(h.queues)],
    handlers: h.handlers ?? null,
    concurrencyKeys: h.concurrency_keys ?? false,
  };
}

export function helloOk(sessionId: string, h: HelloFrame, res: HelloResult, maxFrameBytes: number): GatewayFrame {
  return {
    type: 'hello.ok',
    session_id: sessionId,
    worker_id: h.worker_id,
    lease_ms: res.leaseMs,
    renew_ms: Math.max(1000, Math.floor(res.leaseMs / 3)),
    max_frame_bytes: maxFrameBytes,
    resumed: res.resumed.map(({ queueId: _q, ...r }) => r),
    lost: res.lost,
  };
}

export async function helloTransaction(
  pool: Pool,
  advance: StepAdvancer,
  cred: Credential,
  sessionId: string,
  nodeId: string,
  h: HelloFrame,
): Promise<HelloResult> {
  const claim = helloClaimSession(cred, sessionId, h);
  const { queueIds, concurrencyKeys: keys } = claim;
  const { value: result, ledger: committed } = await withLedgerTx(pool, 'hello', advance, async (c, ledger) => {
    // Checked at the upgrade, maybe long before: share-lock the credential so a revocation either
    // commits first or waits for this hello.
    if (!(await lockLiveCredential(c, cred.id))) throw new OrbitError('UNAUTHENTICATED', 'credential revoked');
    const valid = queueIds.filter((q) => ID_RE.test(q));
    const qrows = valid.length ? await queuesInNamespace(c, cred.namespaceId, valid) : [];
    const found = new Map(qrows.map((r) => [r.id as string, r]));
    for (const q of queueIds) {
      const row = found.get(q);
      if (!row) throw new OrbitError('NOT_FOUND', `queue ${q.slice(0, 64)} not found`);
      if (!canUseQueue(cred, q)) throw new OrbitError('PERMISSION_DENIED', `credential is not authorized for queue ${q}`);
      if (row.retired_at) throw new OrbitError('RESOURCE_RETIRED', `queue ${q} is retired`);
    }
    const leaseMs = Math.min(...qrows.map((r) => Number(r.lease_seconds))) * 1000;

    // The capability flag is frozen by the first hello of a worker_id.
    const identity = await lockWorkerIdentity(c, cred.namespaceId, h.worker_id);
    if (identity) {
      if (identity.concurrency_keys !== (keys ? 1 : 0)) {
        throw new OrbitError(
          'STATE_CONFLICT',
          'concurrency_keys differs from the first hello of this worker_id; a process that upgrades must use a new worker_id',
        );
      }
      await setCurrentSession(c, cred.namespaceId, h.worker_id, sessionId, h.agent ?? null);
    } else {
      await insertWorkerIdentity(c, { namespaceId: cred.namespaceId, workerId: h.worker_id, concurrencyKeys: keys, sessionId, agent: h.agent ?? null });
    }
    await closeSupersededSessions(c, cred.namespaceId, h.worker_id);
    await insertWorkerSession(c, { ...claim, id: sessionId, nodeId, capacity: h.capacity });

    const live = await lockLiveAttemptsOfWorker(c, cred.namespaceId, h.worker_id);
    const listed = new Set(h.resume ?? []);
    const resumed: HelloResult['resumed'] = [];
    const resumedIds = live.filter((a) => listed.has(a.id) && a.lease_live).map((a) => a.id);
    const unlisted = live.filter((a) => !listed.has(a.id) && a.state === 'LEASED').map((a) => ({ a, kind: 'release-unlisted' as const }));
    await revokeAttempts(c, ledger, unlisted);
    // Unlisted RUNNING attempts run out their lease; listed expired ones are lost.
    if (resumedIds.length) {
      // Lease lengths as literals: a join with queues would share-lock the queue row.
      const byId = new Map(live.map((a) => [a.id, a.queue_id]));
      const queues = resumedIds.map((id) => byId.get(id)!);
      const lease = [...(await queueConfigs(c, queues))].map(([q, v]) => [q, v.leaseSeconds] as const);
      await rebindAttempts(c, sessionId, lease, resumedIds);
      for (const a of await readAttempts(c, resumedIds)) {
        const token = a.concurrency_token === null ? {} : { concurrency_token: String(a.concurrency_token) };
        resumed.push({ attempt_id: a.id, state: a.state as LiveAttemptState, lease_expires_at: toIso(a.lease_expires_at)!, ...token, queueId: a.queue_id });
      }
    }
    const resumedSet = new Set(resumedIds);
    return { resumed, lost: (h.resume ?? []).filter((id) => !resumedSet.has(id)), leaseMs, freedQueues: [] as string[] };
  });
  result.freedQueues = [...committed.freedQueues];
  return result;
}
