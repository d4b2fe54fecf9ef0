import { OrbitError } from '@orbit/protocol/errors';
import { ID_RE } from '@orbit/protocol/validation';
import { withTransaction, toIso, type Pool } from '../db/pool.js';
import { lockLiveCredential } from '../db/credentials.js';
import { attemptQueues } from '../db/attempt-batches.js';
import { readLiveLeases, renewLeases } from '../db/attempt-leases.js';
import { queueConfigs } from '../db/queue-config.js';
import type { Identity } from './frame-commands.js';

export async function renewAttempts(
  pool: Pool,
  who: Identity,
  ids: string[],
  knownQueues: ReadonlyMap<string, string> = new Map(),
): Promise<{ leases: { attempt_id: string; lease_expires_at: string }[]; lost: string[] }> {
  const valid = [...new Set(ids.filter((id) => ID_RE.test(id)))];
  if (valid.length === 0) return { leases: [], lost: ids };
  return withTransaction(pool, async (c) => {
    if (!(await lockLiveCredential(c, who.credentialId))) throw new OrbitError('UNAUTHENTICATED', 'credential revoked');
    // Lease lengths as literals: a join with queues would share-lock the queue row.
    const queueOf = await attemptQueues(c, valid, knownQueues);
    const lease = [...(await queueConfigs(c, queueOf.values()))].map(([q, v]) => [q, v.leaseSeconds] as const);
    await renewLeases(c, who, valid, lease);
    const rows = await readLiveLeases(c, who, valid);
    const ok = new Map(rows.map((r) => [r.id, toIso(r.lease_expires_at)!]));
    return {
      leases: [...ok].map(([attempt_id, lease_expires_at]) => ({ attempt_id, lease_expires_at })),
      lost: ids.filter((id) => !ok.has(id)),
    };
  });
}
