// start frames in the frame committer's transaction (frame-committer.ts): the batch's attempts
// LEASED -> RUNNING with their lease end from the database clock, one UPDATE for all of them; a
// read-back only when some start did not apply, for each frame's exact answer.
import { toIso, type Tx } from '../db/pool.js';
import { queueConfigs } from '../db/queue-config.js';
import { attemptQueues, readStartStates, startAttempts } from '../db/attempt-batches.js';
import { plusMs } from '../db/time.js';
import { fail, type FrameCommand, type FrameOutcome } from './frame-commands.js';

/** `last`: nothing else in the transaction writes (a batch of starts only), so the UPDATE carries
 * the COMMIT (one round trip less on every start of a hot key's turnover); the read-back, when a
 * start did not apply, then reads committed state — the rows it reads were not changed by it. */
export async function applyStarts(
  c: Tx,
  items: { i: number; cmd: Extract<FrameCommand, { kind: 'start' }> }[],
  now: string,
  out: FrameOutcome[],
  last = false,
): Promise<void> {
  if (items.length === 0) return;
  // One entry per (attempt, identity): two workers naming the same attempt in one batch are two
  // starts (only the owner's applies; the other is answered LEASE_LOST by the read-back), while a
  // repeated start of one worker is one.
  const unique = new Map(items.map((x) => [`${x.cmd.attemptId}/${x.cmd.who.namespaceId}/${x.cmd.who.workerId}`, x]));
  const attemptIds = [...new Set(items.map((x) => x.cmd.attemptId))];
  const known = new Map([...unique.values()].filter((x) => x.cmd.queueId !== null).map((x) => [x.cmd.attemptId, x.cmd.queueId!]));
  const queueOf = await attemptQueues(c, attemptIds, known);
  const cfg = await queueConfigs(c, queueOf.values());
  const lease = new Map([...cfg].map(([q, v]) => [q, v.leaseSeconds]));
  const changed = await startAttempts(
    c,
    [...unique.values()].map((x) => ({ attemptId: x.cmd.attemptId, namespaceId: x.cmd.who.namespaceId, workerId: x.cmd.who.workerId })),
    now,
    lease,
    last,
  );
  if (changed === 2 * unique.size) {
    // Every start applied (an attempt and its task each): the lease ends are now + the queue's
    // lease, as the statement computed them; no read-back.
    for (const { i, cmd } of items) {
      out[i] = { ok: true, kind: 'start', leaseExpiresAt: toIso(plusMs(now, lease.get(queueOf.get(cmd.attemptId)!)! * 1000))! };
    }
    return;
  }
  // Some start did not apply: read every attempt of the batch back for its exact answer.
  const rows = new Map((await readStartStates(c, attemptIds, now)).map((r) => [r.id, r]));
  for (const { i, cmd } of items) {
    const a = rows.get(cmd.attemptId);
    if (!a || a.namespace_id !== cmd.who.namespaceId) out[i] = fail('NOT_FOUND', 'unknown attempt', cmd.attemptId);
    else if (a.worker_id !== cmd.who.workerId) out[i] = fail('LEASE_LOST', 'attempt belongs to another worker', cmd.attemptId);
    else if (a.state === 'RUNNING' && a.live === 1) out[i] = { ok: true, kind: 'start', leaseExpiresAt: toIso(a.lease_expires_at)! };
    else if (a.state === 'LEASED' && a.live === 1) out[i] = fail('LEASE_LOST', 'task deadline passed before start', cmd.attemptId);
    else if (a.state === 'LEASED' || a.state === 'RUNNING') out[i] = fail('LEASE_LOST', 'attempt is past its lease', cmd.attemptId);
    else out[i] = fail('LEASE_LOST', `attempt is ${a.state}`, cmd.attemptId);
  }
}
