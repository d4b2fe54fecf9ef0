// start and result frames of every session of a node, coalesced per application into shared
// transactions of batch-shaped statements (server/db/attempt-batches.ts). A transaction of k starts
// and m results costs, whatever k and m:
//   1 credential check + database clock, 1 UPDATE for the starts (a read-back only when some start
//   did not apply), 1 locking read of the results' attempts and tasks, 1 UPDATE of attempts,
//   1 UPDATE of tasks, then the ledger flush (queues, application, keys, stream head, events).
// Results hand a released key to its next task (handoff.ts) and an unkeyed attempt's slot to the
// next task of its queue for the same session (refill.ts) in the same transaction.
// Each frame gets its own answer: a refused item (NOT_FOUND, LEASE_LOST, STATE_CONFLICT,
// PAYLOAD_TOO_LARGE, UNAUTHENTICATED) is decided before anything is written for it, so it needs no
// savepoint; any other failure fails the transaction, which is retried whole on a deadlock, and a
// batch that still fails is run again item by item, so only the item that cannot commit fails.
import crypto from 'node:crypto';
import { OrbitError } from '@orbit/protocol/errors';
import type { ResultFrame } from '@orbit/protocol/frames';
import { isId } from '@orbit/protocol/ids';
import { MAX_OUTPUT_BYTES } from '@orbit/protocol/limits';
import { canonicalJson } from '@orbit/protocol/validation';
import { lockLiveCredentialsWithClock } from '../db/credentials.js';
import { isDatabaseRefusal, toIso, withTransaction, type Conn, type Pool } from '../db/pool.js';
import { poolBudget } from '../db/packet-budget.js';
import { queueConfigs } from '../db/queue-config.js';
import {
  attemptQueues,
  closeAttempts,
  lockResultRows,
  readStartStates,
  startAttempts,
  updateTasksAfterResults,
  type ClosedAttempt,
  type TaskAfterResult,
} from '../db/attempt-batches.js';
import { coalesce, type Coalesced } from './coalesce.js';
import { PermitLedger } from './ledger.js';
import { OUTCOME_EVENT } from './events.js';
import { decideOutcome } from './result-decision.js';
import { completeHandoffs, planHandoffs, type Delivery, type HandoffHost, type HandoffPlan, type ReleasedKey, type Reservation } from './handoff.js';
import { planRefills, type FreedSlot } from './refill.js';
import { QueueHints } from './queue-hints.js';
import { HandoffRefused } from './ledger.js';
import { advanceSteps } from './step-advance.js';
import { dbTimeToMs, plusMs } from '../db/time.js';

export interface Identity {
  namespaceId: string;
  workerId: string;
  /** The session's credential: checked (and share-locked) inside each transaction. */
  credentialId: string;
}

export interface ResultReply {
  type: 'result.ok';
  attempt_id: string;
  deduplicated: boolean;
  task_state: string;
}

export type FrameCommand =
  | { kind: 'start'; who: Identity; attemptId: string; /** the attempt's queue when the session holds it */ queueId: string | null }
  | { kind: 'result'; who: Identity; frame: ResultFrame; /** the sending session: its freed slot may be refilled (refill.ts) */ sessionId?: string };

export type FrameOutcome =
  | { ok: true; kind: 'start'; leaseExpiresAt: string }
  | {
      ok: true;
      kind: 'result';
      reply: ResultReply;
      freedQueues: string[];
      /** its key went straight to the next task */
      handedOff?: boolean;
      /** its slot went straight to the next task of its queue, for the same session */
      refilled?: boolean;
    }
  | { ok: false; error: OrbitError }
  /** The item's own transaction failed unexpectedly (a batch retried item by item): the session's
   * boundary answers it (UNAVAILABLE for a refusing database, else INTERNAL, reported). */
  | { ok: false; thrown: unknown };

const fail = (code: ConstructorParameters<typeof OrbitError>[0], message: string, attemptId: string): FrameOutcome => ({
  ok: false,
  error: new OrbitError(code, message, { attempt_id: attemptId }),
});

/** A result's output as stored (JSON text, null without output), serialized once per frame: the
 * size limit, the batch weight and the row all read it (it was stringified three times). */
const outputTexts = new WeakMap<ResultFrame, string | null>();
function outputJson(f: ResultFrame): string | null {
  let text = outputTexts.get(f);
  if (text === undefined) {
    text = f.output === undefined ? null : JSON.stringify(f.output);
    outputTexts.set(f, text);
  }
  return text;
}

function resultFingerprint(f: ResultFrame): string {
  return crypto
    .createHash('sha256')
    .update(canonicalJson({ outcome: f.outcome, output: f.output, error: f.error, retry_after_ms: f.retry_after_ms }))
    .digest('hex');
}

/** `last`: nothing else in the transaction writes (a batch of starts only), so the UPDATE carries
 * the COMMIT (one round trip less on every start of a hot key's turnover); the read-back, when a
 * start did not apply, then reads committed state — the rows it reads were not changed by it. */
async function starts(
  c: Conn,
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

async function results(
  c: Conn,
  ledger: PermitLedger,
  items: { i: number; cmd: Extract<FrameCommand, { kind: 'result' }> }[],
  now: string,
  out: FrameOutcome[],
  released: ReleasedKey[],
  freed: FreedSlot[],
): Promise<void> {
  if (items.length === 0) return;
  const namespaces = [...new Set(items.map((x) => x.cmd.who.namespaceId))];
  const rows = new Map((await lockResultRows(c, [...new Set(items.map((x) => x.cmd.frame.attempt_id))], namespaces, now)).map((r) => [r.id, r]));
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
    if (a.concurrency_key)
      released.push({ namespaceId: a.namespace_id, applicationId: a.application_id, queueId: a.queue_id, key: a.concurrency_key, attemptId: a.id });
    else if (cmd.sessionId)
      freed.push({ sessionId: cmd.sessionId, namespaceId: a.namespace_id, applicationId: a.application_id, queueId: a.queue_id, attemptId: a.id });
    if (d.taskState === 'WAITING') {
      tasks.push({ id: a.task_id, state: 'WAITING', attemptsMade: d.attemptsMade, notBefore: plusMs(now, d.backoffMs), result: null, terminal: false });
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

export interface FrameBatchResult {
  outcomes: FrameOutcome[];
  /** Key hand-offs and refills to deliver after the commit. */
  handoffs: Delivery[];
}

/** One transaction for a batch of one application's frames; with a host, released keys are
 * handed to their next task and freed slots refilled in the same transaction (handoff.ts,
 * refill.ts), skipping the queues `hints` marks. A batch whose transaction fails (after its
 * deadlock retries) for another reason than a refusal of the database is run again one frame per
 * transaction: the frames that can commit do, and only the one that cannot fails (`thrown`). The
 * one batch that may have committed before failing — starts only, sent with their COMMIT
 * (commitWith) — is safe to run again: a repeated start is answered from the row. A refusal is not run
 * again frame by frame: a lost connection's outcome is unknown, and a deadlock or lock wait that
 * outlasted the retries says the database is busy — n single-frame transactions with their own
 * retries would hold the node's two frame committers for n times as long. The sessions close
 * UNAVAILABLE and resume. */
export async function runFrameBatch(pool: Pool, cmds: FrameCommand[], host?: HandoffHost, hints: QueueHints = new QueueHints()): Promise<FrameBatchResult> {
  try {
    return await runFrameTransaction(pool, cmds, host, hints);
  } catch (err) {
    if (cmds.length === 1 || isDatabaseRefusal(err)) throw err;
    const out: FrameBatchResult = { outcomes: [], handoffs: [] };
    for (const cmd of cmds) {
      try {
        const r = await runFrameTransaction(pool, [cmd], host, hints);
        out.outcomes.push(r.outcomes[0]!);
        out.handoffs.push(...r.handoffs);
      } catch (e) {
        if (isDatabaseRefusal(e)) throw e;
        out.outcomes.push({ ok: false, thrown: e });
      }
    }
    return out;
  }
}

async function runFrameTransaction(pool: Pool, cmds: FrameCommand[], host: HandoffHost | undefined, hints: QueueHints): Promise<FrameBatchResult> {
  const reserved: Reservation[] = [];
  const undo = () => {
    for (const r of reserved.splice(0)) {
      if (r.attemptId) host!.unreserveFreed(r.sessionId, r.attemptId);
      else host!.unreserve(r.sessionId);
    }
  };
  try {
    const r = await withTransaction(pool, 'frames', (c) => {
      undo(); // a deadlock retry starts over
      return batchInTx(c, cmds, host ? { host, hints } : null, reserved);
    });
    // Reservations not used by an applied hand-off or refill (a key was exhausted, a session's
    // credential revoked, no candidate) are given back; the used ones become held attempts at
    // delivery.
    for (const h of r.handoffs) {
      const i = reserved.findIndex((x) => x.sessionId === h.session.sessionId && x.attemptId === h.replaces);
      if (i >= 0) reserved.splice(i, 1);
    }
    undo();
    return r;
  } catch (err) {
    undo();
    if (!(err instanceof HandoffRefused)) throw err;
    // A queue of a hand-off or refill was paused or retired meanwhile (or is over a lowered
    // limit): the same batch without them, and that queue is skipped for a while.
    hints.markRefused(err.queueIds);
    return withTransaction(pool, 'frames', (c) => batchInTx(c, cmds, null, reserved));
  }
}

async function batchInTx(
  c: Conn,
  cmds: FrameCommand[],
  successors: { host: HandoffHost; hints: QueueHints } | null,
  reserved: Reservation[],
): Promise<FrameBatchResult> {
  const out: FrameOutcome[] = new Array(cmds.length);
  const ledger = new PermitLedger();
  const released: ReleasedKey[] = [];
  const freed: FreedSlot[] = [];
  const { live, now } = await lockLiveCredentialsWithClock(c, [...new Set(cmds.map((x) => x.who.credentialId))]);
  const startItems: { i: number; cmd: Extract<FrameCommand, { kind: 'start' }> }[] = [];
  const resultItems: { i: number; cmd: Extract<FrameCommand, { kind: 'result' }> }[] = [];
  cmds.forEach((cmd, i) => {
    const attemptId = cmd.kind === 'start' ? cmd.attemptId : cmd.frame.attempt_id;
    if (!live.has(cmd.who.credentialId)) out[i] = { ok: false, error: new OrbitError('UNAUTHENTICATED', 'credential revoked') };
    else if (!isId(attemptId)) out[i] = fail('NOT_FOUND', 'unknown attempt', attemptId);
    else if (cmd.kind === 'start') startItems.push({ i, cmd });
    else if (Buffer.byteLength(outputJson(cmd.frame) ?? '') > MAX_OUTPUT_BYTES) {
      out[i] = fail('PAYLOAD_TOO_LARGE', `output over ${MAX_OUTPUT_BYTES} bytes`, attemptId);
    } else resultItems.push({ i, cmd });
  });
  await starts(c, startItems, now, out, resultItems.length === 0);
  await results(c, ledger, resultItems, now, out, released, freed);
  let plans: HandoffPlan[] = [];
  let refills: HandoffPlan[] = [];
  if (successors) {
    const { host, hints } = successors;
    const refused = hints.refusedQueues();
    plans = await planHandoffs(
      c,
      host,
      ledger,
      released.filter((r) => !refused.has(r.queueId)),
      now,
      live,
      reserved,
    );
    refills = await planRefills(c, host, ledger, freed, now, reserved, hints);
  }
  // Keys first, then the hand-off and refill attempts, then the hot rows to the commit (lock order).
  await ledger.flushKeys(c);
  const handoffs = await completeHandoffs(c, ledger, [...plans, ...refills], now);
  // Workflow steps whose tasks changed advance here, before the hot rows (nothing for plain tasks).
  const stepQueues = await advanceSteps(c, ledger);
  await ledger.flushCounters(c);
  // A result whose key was handed off or whose slot was refilled freed no permit (the successor
  // took it back): no claim round needs waking for its queue (measured: 0.64 rounds per task on
  // ten hot keys, 99 % empty, before that rule).
  const handed = new Set(plans.filter((p) => ledger.handoffTokens.has(p.newAttemptId)).map((p) => p.oldAttemptId));
  const refilled = new Set(refills.map((p) => p.oldAttemptId));
  for (const o of out) {
    if (!o?.ok || o.kind !== 'result' || o.reply.deduplicated) continue;
    if (handed.has(o.reply.attempt_id)) Object.assign(o, { freedQueues: [], handedOff: true });
    else if (refilled.has(o.reply.attempt_id)) Object.assign(o, { freedQueues: [], refilled: true });
  }
  const first = out.find((o) => o?.ok && o.kind === 'result');
  if (stepQueues.length > 0 && first?.ok && first.kind === 'result') first.freedQueues.push(...stepQueues);
  return { outcomes: out, handoffs };
}

/** The bytes of a frame's values stored by its transaction (a result's output and error message;
 * a start carries none): the weight that bounds a batch (coalesce.ts). */
function resultBytes(cmd: FrameCommand): number {
  if (cmd.kind !== 'result') return 0;
  const f = cmd.frame;
  return Buffer.byteLength(outputJson(f) ?? '') + Buffer.byteLength(f.error?.message ?? '');
}

/** The node's frame committer: per-application group commit of start and result frames. */
export class FrameCommitter {
  private readonly committer: Coalesced<FrameCommand, FrameOutcome>;

  /** What recent batches learned about queues (refused, drained). */
  readonly hints = new QueueHints();

  constructor(pool: Pool, onBatch: (size: number, seconds: number, handoffs: number, refills: number) => void, host?: HandoffHost) {
    this.committer = coalesce(
      async (_app, cmds) => {
        const started = process.hrtime.bigint();
        const r = await runFrameBatch(pool, cmds, host, this.hints);
        for (const h of r.handoffs) host!.deliver(h.session, h.a, h.replaces);
        const refills = r.handoffs.filter((h) => h.replaces).length;
        onBatch(cmds.length, Number(process.hrtime.bigint() - started) / 1e9, r.handoffs.length - refills, refills);
        return r.outcomes;
      },
      { maxBatch: 256, maxParallel: 2, weight: { of: resultBytes, max: () => poolBudget(pool).bytes } },
    );
  }

  run(applicationId: string, cmd: FrameCommand): Promise<FrameOutcome> {
    return this.committer(applicationId, cmd);
  }
}
