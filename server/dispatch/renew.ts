import { OrbitError } from '@orbit/protocol/errors';
import { ID_RE } from '@orbit/protocol/validation';
import type { RenewOkFrame } from '@orbit/protocol/frames';
import { withTransaction, toIso, type Pool } from '../db/pool.js';
import { lockLiveCredential } from '../db/credentials.js';
import { attemptQueues } from '../db/attempt-batches.js';
import { readLiveLeases, renewLeases } from '../db/attempt-leases.js';
import { queueConfigs } from '../db/queue-config.js';
import type { Identity } from './frame-commands.js';

export type RenewReply = Omit<RenewOkFrame, 'type'>;

/** One transaction for a session's waiting renew frames; each is answered as if alone (`lost` as it
 * named them, duplicates and malformed ids included). */
export async function renewFrames(pool: Pool, who: Identity, frames: string[][], knownQueues: ReadonlyMap<string, string> = new Map()): Promise<RenewReply[]> {
  const valid = [...new Set(frames.flat().filter((id) => ID_RE.test(id)))];
  const renewed: Map<string, string> =
    valid.length === 0
      ? new Map()
      : await withTransaction(pool, async (c) => {
          if (!(await lockLiveCredential(c, who.credentialId))) throw new OrbitError('UNAUTHENTICATED', 'credential revoked');
          // Lease lengths as literals: a join with queues would share-lock the queue row.
          const queueOf = await attemptQueues(c, valid, knownQueues);
          const lease = [...(await queueConfigs(c, queueOf.values()))].map(([q, v]) => [q, v.leaseSeconds] as const);
          await renewLeases(c, who, valid, lease);
          return new Map((await readLiveLeases(c, who, valid)).map((r) => [r.id, toIso(r.lease_expires_at)!]));
        });
  return frames.map((ids) => ({
    leases: [...new Set(ids)].flatMap((attempt_id) => (renewed.has(attempt_id) ? [{ attempt_id, lease_expires_at: renewed.get(attempt_id)! }] : [])),
    lost: ids.filter((id) => !renewed.has(id)),
  }));
}
