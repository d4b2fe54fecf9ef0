// Task commands of the HTTP facade: cancel (WAITING or LEASED) and resolve (NEEDS_REVIEW). Each runs
// inside the idempotent command's transaction. Resolve locks only the task (a NEEDS_REVIEW task
// has no live attempt); cancel locks the attempt before the task (docs/design.md, "Lock order").
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

/** Cancels a WAITING or LEASED task. Locks in the fixed order of docs/design.md ("Lock order"),
 * the attempt before its task, as results (lockResultRowsSql) and the sweeper do: the task's current
 * attempt is read without a lock, that attempt locked, then the task. Locking the task first
 * deadlocked with a result of the same attempt (each held the row the other waited for; InnoDB
 * rolled one back and withTransaction hid it by a retry). */
export async function cancelTask(c: Tx, advance: StepAdvancer, namespaceId: string, taskId: string, reason: string | undefined): Promise<CommandEffect> {
  const seen = (await getTask(c, namespaceId, taskId))!;
  const first = seen.state === 'LEASED' && seen.current_attempt_id ? await getAttempt(c, namespaceId, seen.current_attempt_id, true) : null;
  const t = (await getTask(c, namespaceId, taskId, true))!;
  const { value: revoked, ledger: flushed } = await withLedger(c, advance, async (ledger) => {
    if (t.state === 'WAITING') {
      await endTasks(c, ledger, [{ t, end: 'cancel', reason }]);
      return [];
    } else if (t.state === 'LEASED' && t.current_attempt_id) {
      // The task moved on between the two reads (claimed again): its attempt is locked now, after
      // the task, but without waiting — a held row fails the statement with 1205 and the whole
      // transaction runs again (withTransaction, or the command's serialized path), in order.
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
  const t = (await getTask(c, namespaceId, taskId, true))!;
  if (t.state !== 'NEEDS_REVIEW') throw new OrbitError('STATE_CONFLICT', `task is ${t.state}; only NEEDS_REVIEW tasks can be resolved`);
  const { ledger: flushed } = await withLedger(c, advance, (ledger) => endTasks(c, ledger, [{ t, end: `resolve-${resolution}`, reason }]));
  return { task: (await getTask(c, namespaceId, taskId))!, revoked: [], freedQueues: [...flushed.freedQueues] };
}
