// Task commands of the HTTP facade, each inside the idempotent command's transaction: cancel
// (WAITING or LEASED) and resolve (NEEDS_REVIEW: no live attempt, so only the task is locked).
import { OrbitError } from '@orbit/protocol/errors';
import type { Tx } from '../db/pool.js';
import { getTask, type TaskRow } from '../db/tasks.js';
import { getAttempt } from '../db/attempts.js';
import { withLedger, type StepAdvancer } from './ledger.js';
import { endTasks } from './lifecycle.js';
import { revokeAttempts, type Revoked } from './revoke.js';

export interface CommandEffect {
  task: TaskRow;
  revoked: Revoked[];
  freedQueues: string[];
}

/** Cancels a WAITING or LEASED task, locking the attempt before its task as results and the sweeper
 * do (docs/design.md, "Lock order"): the current attempt is read without a lock, locked, then the task. */
export async function cancelTask(c: Tx, advance: StepAdvancer, namespaceId: string, taskId: string, reason: string | undefined): Promise<CommandEffect> {
  const seen = (await getTask(c, namespaceId, taskId))!;
  const first = seen.state === 'LEASED' && seen.current_attempt_id ? await getAttempt(c, namespaceId, seen.current_attempt_id, 'update') : null;
  const t = (await getTask(c, namespaceId, taskId, 'update'))!;
  const { value: revoked, ledger: flushed } = await withLedger(c, advance, async (ledger) => {
    if (t.state === 'WAITING') {
      await endTasks(c, ledger, [{ t, end: 'cancel', reason }]);
      return [];
    } else if (t.state === 'LEASED' && t.current_attempt_id) {
      // Claimed again between the two reads: its attempt is locked after the task, but NOWAIT — a
      // held row fails the statement and the whole transaction runs again, in order.
      const a = first?.id === t.current_attempt_id ? first : (await getAttempt(c, namespaceId, t.current_attempt_id, 'nowait'))!;
      return revokeAttempts(c, ledger, [{ a, kind: 'cancel', reason }]);
    } else {
      throw new OrbitError('STATE_CONFLICT', `task is ${t.state}; only WAITING or LEASED tasks can be cancelled`);
    }
  });
  return { task: (await getTask(c, namespaceId, taskId))!, revoked, freedQueues: [...flushed.freedQueues] };
}

export async function resolveTask(
  c: Tx,
  advance: StepAdvancer,
  namespaceId: string,
  taskId: string,
  resolution: 'succeeded' | 'failed' | 'retry',
  reason: string | undefined,
): Promise<CommandEffect> {
  const t = (await getTask(c, namespaceId, taskId, 'update'))!;
  if (t.state !== 'NEEDS_REVIEW') throw new OrbitError('STATE_CONFLICT', `task is ${t.state}; only NEEDS_REVIEW tasks can be resolved`);
  const { ledger: flushed } = await withLedger(c, advance, (ledger) => endTasks(c, ledger, [{ t, end: `resolve-${resolution}`, reason }]));
  return { task: (await getTask(c, namespaceId, taskId))!, revoked: [], freedQueues: [...flushed.freedQueues] };
}
