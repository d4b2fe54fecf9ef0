// The task transition shared by results, cancels, the sweeper and workflow steps: a task to a
// terminal state or NEEDS_REVIEW, with its result event and unfinished-count change in the ledger.
// (start and result frames are applied in batches by frame-committer.ts; what a result decides is
// result-decision.ts; renew is renew.ts.)
import type { TerminalTaskState } from '@orbit/protocol/states';
import type { Tx } from '../db/pool.js';
import type { TaskRow } from '../db/tasks.js';
import { finishTaskRow } from '../db/task-transitions.js';
import type { PermitLedger } from './ledger.js';
import { OUTCOME_EVENT } from './events.js';

/** Moves a task to a terminal state or NEEDS_REVIEW with its result, and records the event and
 * the unfinished-count change in the ledger. The caller holds the task row lock. */
export async function finishTask(
  c: Tx,
  ledger: PermitLedger,
  t: TaskRow,
  r: {
    state: TerminalTaskState | 'NEEDS_REVIEW';
    outcome: string;
    output?: string | null;
    error?: { code: string; message: string } | null;
    attemptsMade?: number;
  },
): Promise<void> {
  const terminal = r.state !== 'NEEDS_REVIEW';
  await finishTaskRow(c, t.id, {
    state: r.state,
    attemptsMade: r.attemptsMade ?? t.attempts_made,
    outcome: r.outcome,
    output: r.output ?? null,
    errorCode: r.error?.code ?? null,
    errorMessage: r.error?.message ?? null,
    terminal,
  });
  // A WAITING task (cancel, deadline) is no longer claimable: its waiting row goes at the flush,
  // under its key row's lock (db/waiting-tasks.ts "Waiting heads").
  if (t.state === 'WAITING') ledger.leaveWaiting(t);
  if (terminal) ledger.taskFinished(t.application_id);
  ledger.taskChanged(t);
  const result: Record<string, unknown> = { outcome: r.outcome };
  if (r.output) result.output = JSON.parse(r.output);
  if (r.error) result.error = r.error;
  ledger.event({ namespaceId: t.namespace_id, type: OUTCOME_EVENT[r.outcome]!, taskId: t.id, queueId: t.queue_id, result });
}
