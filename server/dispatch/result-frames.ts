// result frames in the frame committer's transaction (frame-committer.ts): one locking read of
// the results' attempts and tasks, each result decided (lifecycle.ts decideOutcome) or answered from the
// stored reply (a repeated frame), then ended by the lifecycle (lifecycle.ts endAttempts): one
// UPDATE of attempts and one of tasks, the rest in the transaction's ledger.
import type { ResultOkFrame } from '@orbit/protocol/frames';
import type { Tx } from '../db/pool.js';
import { queueConfigs } from '../db/queue-config.js';
import { lockResultRowsSql, type ResultRow } from '../db/attempt-batches.js';
import { dbTimeToMs, plusMs } from '../db/time.js';
import type { PermitLedger } from './ledger.js';
import { fingerprintOf } from './idempotency.js';
import { decideOutcome, endAttempts, type AttemptEnding } from './lifecycle.js';
import { fail, type FrameCommand, type FrameOutcome } from './frame-commands.js';

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
  const ends: AttemptEnding[] = [];
  /** Results accepted earlier in this batch (a duplicate frame in the same batch). */
  const accepted = new Map<string, { fp: string; reply: ResultOkFrame }>();
  for (const { i, cmd } of items) {
    const f = cmd.frame;
    const fp = fingerprintOf({ outcome: f.outcome, output: f.output, error: f.error, retry_after_ms: f.retry_after_ms });
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
        out[i] = { ok: true, kind: 'result', reply: { ...(JSON.parse(storedReply) as ResultOkFrame), deduplicated: true }, freedQueues: [] };
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
    const reply: ResultOkFrame = { type: 'result.ok', attempt_id: a.id, deduplicated: false, task_state: d.taskState };
    ends.push({
      a,
      t: {
        id: a.task_id,
        namespace_id: a.namespace_id,
        application_id: a.application_id,
        queue_id: a.queue_id,
        concurrency_key: a.concurrency_key,
        state: a.t_state,
        attempts_made: a.t_attempts_made,
        current_attempt_id: a.t_current_attempt_id,
        not_before: null,
        workflow_run_id: a.t_workflow_run_id,
        workflow_step: a.t_workflow_step,
      },
      end: f.outcome,
      result: {
        taskState: d.taskState,
        taskOutcome: d.taskOutcome,
        attemptsMade: d.attemptsMade,
        notBefore: d.taskState === 'WAITING' ? plusMs(now, d.backoffMs) : null,
        output: cmd.output,
        outputValue: f.output,
        error: f.error ?? null,
        fingerprint: fp,
        reply: JSON.stringify(reply),
      },
    });
    accepted.set(a.id, { fp, reply });
    out[i] = { ok: true, kind: 'result', reply, freedQueues: [a.queue_id] };
  }
  await endAttempts(c, ledger, ends, now);
}
