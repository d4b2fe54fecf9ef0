// result frames in the frame committer's transaction (frame-committer.ts): one locking read of
// the results' attempts and tasks, each result decided (result-decision.ts) or answered from the
// stored reply (a repeated frame), then one UPDATE of attempts and one of tasks; permits, keys,
// waiting rows and events go to the transaction's ledger.
import crypto from 'node:crypto';
import type { ResultFrame } from '@orbit/protocol/frames';
import { canonicalJson } from '@orbit/protocol/validation';
import type { Tx } from '../db/pool.js';
import { queueConfigs } from '../db/queue-config.js';
import { closeAttempts, lockResultRowsSql, updateTasksAfterResults, type ClosedAttempt, type ResultRow, type TaskAfterResult } from '../db/attempt-batches.js';
import { dbTimeToMs, plusMs } from '../db/time.js';
import type { PermitLedger } from './ledger.js';
import { OUTCOME_EVENT } from './events.js';
import { decideOutcome } from './result-decision.js';
import { fail, outputJson, type FrameCommand, type FrameOutcome, type ResultReply } from './frame-commands.js';

function resultFingerprint(f: ResultFrame): string {
  return crypto
    .createHash('sha256')
    .update(canonicalJson({ outcome: f.outcome, output: f.output, error: f.error, retry_after_ms: f.retry_after_ms }))
    .digest('hex');
}

type ResultItem = { i: number; cmd: Extract<FrameCommand, { kind: 'result' }> };

/** The locking read of the results' attempts and tasks (db/attempt-batches.ts lockResultRowsSql),
 * sent in the batch's first round trip after the credential check (frame-committer.ts). */
export function resultRowsSql(items: ResultItem[]): [string, unknown[]] {
  return lockResultRowsSql([...new Set(items.map((x) => x.cmd.frame.attempt_id))], [...new Set(items.map((x) => x.cmd.who.namespaceId))]);
}

/** The results `items` (credentials live) decided on their locked rows `locked` (resultRowsSql). */
export async function applyResults(c: Tx, ledger: PermitLedger, items: ResultItem[], locked: ResultRow[], now: string, out: FrameOutcome[]): Promise<void> {
  if (items.length === 0) return;
  const rows = new Map(locked.map((r) => [r.id, r]));
  const retryQueues = items
    .filter((x) => x.cmd.frame.outcome === 'retry')
    .map((x) => rows.get(x.cmd.frame.attempt_id)?.queue_id)
    .filter((q): q is string => !!q);
  const cfg = retryQueues.length ? await queueConfigs(c, retryQueues) : new Map();
  const nowMs = dbTimeToMs(now);
  const closed: ClosedAttempt[] = [];
  const tasks: TaskAfterResult[] = [];
  /** Results accepted earlier in this batch (a duplicate frame in the same batch). */
  const accepted = new Map<string, { fp: string; reply: ResultReply }>();
  for (const { i, cmd } of items) {
    const f = cmd.frame;
    const fp = resultFingerprint(f);
    const a = rows.get(f.attempt_id);
    if (!a || a.namespace_id !== cmd.who.namespaceId) {
      out[i] = fail('NOT_FOUND', 'unknown attempt', f.attempt_id);
      continue;
    }
    if (a.worker_id !== cmd.who.workerId) {
      out[i] = fail('LEASE_LOST', 'attempt belongs to another worker', f.attempt_id);
      continue;
    }
    const earlier = accepted.get(a.id);
    const storedFp = earlier?.fp ?? a.result_fingerprint;
    const storedReply = earlier ? JSON.stringify(earlier.reply) : a.result_reply;
    if (earlier || (a.state !== 'LEASED' && a.state !== 'RUNNING')) {
      if (storedFp === fp && storedReply)
        out[i] = { ok: true, kind: 'result', reply: { ...(JSON.parse(storedReply) as ResultReply), deduplicated: true }, freedQueues: [] };
      else if (storedFp) out[i] = fail('STATE_CONFLICT', 'a different result was already accepted for this attempt', f.attempt_id);
      else out[i] = fail('LEASE_LOST', `attempt is ${a.state}`, f.attempt_id);
      continue;
    }
    if (a.live !== 1) {
      out[i] = fail('LEASE_LOST', 'attempt is past its lease', f.attempt_id);
      continue;
    }
    const d = decideOutcome({
      outcome: f.outcome,
      retryAfterMs: f.retry_after_ms,
      attemptState: a.state,
      attemptsMade: a.t_attempts_made,
      maxAttempts: a.t_max_attempts,
      nowMs,
      deadlineMs: dbTimeToMs(a.t_deadline_at),
      policy: cfg.get(a.queue_id)?.retry ?? null,
      jitter: Math.random(),
    });
    const output = outputJson(f);
    const err = f.error ?? null;
    const reply: ResultReply = { type: 'result.ok', attempt_id: a.id, deduplicated: false, task_state: d.taskState };
    closed.push({
      id: a.id,
      state: d.attemptState,
      outcome: f.outcome,
      output,
      errorCode: err?.code ?? null,
      errorMessage: err?.message ?? null,
      fingerprint: fp,
      reply: JSON.stringify(reply),
    });
    ledger.releaseAttempt(a);
    if (d.taskState === 'WAITING') {
      const notBefore = plusMs(now, d.backoffMs);
      tasks.push({ id: a.task_id, state: 'WAITING', attemptsMade: d.attemptsMade, notBefore, result: null, terminal: false });
      // Its waiting row is written at the flush, after the key row's lock: inserted before it, it
      // would deadlock with a cancel of the key's next row that holds the key row and reads the
      // group for its flag (docs/design.md "Waiting heads").
      ledger.enterWaiting({ id: a.task_id, namespace_id: a.namespace_id, concurrency_key: a.concurrency_key, not_before: notBefore });
    } else {
      const taskOutput = f.outcome === 'succeeded' ? output : null;
      tasks.push({
        id: a.task_id,
        state: d.taskState,
        attemptsMade: d.attemptsMade,
        notBefore: null,
        result: { outcome: d.taskOutcome!, output: taskOutput, errorCode: err?.code ?? null, errorMessage: err?.message ?? null },
        terminal: d.taskState !== 'NEEDS_REVIEW',
      });
      if (d.taskState !== 'NEEDS_REVIEW') ledger.taskFinished(a.application_id);
      const result: Record<string, unknown> = { outcome: d.taskOutcome };
      if (taskOutput !== null) result.output = f.output;
      if (err) result.error = err;
      ledger.event({ namespaceId: a.namespace_id, type: OUTCOME_EVENT[d.taskOutcome!]!, taskId: a.task_id, queueId: a.queue_id, result });
    }
    ledger.taskChanged({ workflow_run_id: a.t_workflow_run_id, workflow_step: a.t_workflow_step });
    accepted.set(a.id, { fp, reply });
    out[i] = { ok: true, kind: 'result', reply, freedQueues: [a.queue_id] };
  }
  await closeAttempts(c, closed, now);
  await updateTasksAfterResults(c, tasks, now);
}
