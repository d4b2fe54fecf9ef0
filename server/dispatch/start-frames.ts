// start frames: the batch's attempts LEASED → RUNNING in one UPDATE, lease ends by the database
// clock; a read-back only when some start did not apply.
import { toIso, type Tx } from '../db/pool.js';
import { queueConfigs } from '../db/queue-config.js';
import { attemptQueues, readStartStates, startAttemptsSql } from '../db/attempt-batches.js';
import { plusMs } from '../db/time.js';
import { fail, type FrameCommand, type FrameOutcome } from './frame-commands.js';

type StartCommand = Extract<FrameCommand, { kind: 'start' }>;
type Indexed = { i: number; cmd: StartCommand };

/** The starts as an UPDATE that checks each start's credential and takes its clock from
 * @orbit_now, for a text that sends the credential check before it. */
export async function checkedStarts(c: Tx, valid: Indexed[]) {
  const unique = new Map(valid.map((x) => [uniqueKey(x.cmd), x]));
  const known = new Map([...unique.values()].filter((x) => x.cmd.queueId !== null).map((x) => [x.cmd.attemptId, x.cmd.queueId!]));
  const queueOf = await attemptQueues(c, [...new Set(valid.map((x) => x.cmd.attemptId))], known);
  const lease = new Map([...(await queueConfigs(c, queueOf.values()))].map(([q, v]) => [q, v.leaseSeconds]));
  // One row per credential too, so a start under a revoked credential cannot stand in for one under
  // a live credential.
  const items = [...new Map(valid.map((x) => [`${uniqueKey(x.cmd)}/${x.cmd.who.credentialId}`, x])).values()].map(({ cmd }) => ({
    attemptId: cmd.attemptId,
    ...cmd.who,
  }));
  const update: [string, unknown[]][] = lease.size > 0 && items.length > 0 ? [startAttemptsSql(items, lease)] : [];
  /** If every start applied (two rows each), the lease ends are computed; else read back. */
  const answer = async (live: Set<string>, now: string, changed: number, out: FrameOutcome[]): Promise<void> => {
    const liveItems = valid.filter((x) => live.has(x.cmd.who.credentialId));
    if (liveItems.length === 0) return;
    if (changed === 2 * new Set(liveItems.map((x) => uniqueKey(x.cmd))).size) {
      for (const { i, cmd } of liveItems) {
        out[i] = { ok: true, kind: 'start', leaseExpiresAt: toIso(plusMs(now, lease.get(queueOf.get(cmd.attemptId)!)! * 1000))! };
      }
      return;
    }
    const rows = new Map((await readStartStates(c, [...new Set(liveItems.map((x) => x.cmd.attemptId))], now)).map((r) => [r.id, r]));
    for (const { i, cmd } of liveItems) {
      const a = rows.get(cmd.attemptId);
      if (!a || a.namespace_id !== cmd.who.namespaceId) out[i] = fail('NOT_FOUND', 'unknown attempt', cmd.attemptId);
      else if (a.worker_id !== cmd.who.workerId) out[i] = fail('LEASE_LOST', 'attempt belongs to another worker', cmd.attemptId);
      else if (a.state === 'RUNNING' && a.live === 1) out[i] = { ok: true, kind: 'start', leaseExpiresAt: toIso(a.lease_expires_at)! };
      else if (a.state === 'LEASED' && a.live === 1) out[i] = fail('LEASE_LOST', 'task deadline passed before start', cmd.attemptId);
      else if (a.state === 'LEASED' || a.state === 'RUNNING') out[i] = fail('LEASE_LOST', 'attempt is past its lease', cmd.attemptId);
      else out[i] = fail('LEASE_LOST', `attempt is ${a.state}`, cmd.attemptId);
    }
  };
  return { update, answer };
}

/** Two workers naming one attempt are two starts; a repeated start of one worker is one. */
const uniqueKey = (cmd: StartCommand) => `${cmd.attemptId}/${cmd.who.namespaceId}/${cmd.who.workerId}`;
