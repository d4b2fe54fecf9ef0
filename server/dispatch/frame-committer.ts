// start and result frames of every session of a node, coalesced per application into shared
// transactions of batch-shaped statements (server/db/attempt-batches.ts). A transaction of k starts
// and m results costs, whatever k and m:
//   1 credential check + database clock, 1 UPDATE for the starts (a read-back only when some start
//   did not apply), 1 locking read of the results' attempts and tasks (these three in one round
//   trip), 1 UPDATE of attempts,
//   1 UPDATE of tasks, then the ledger flush (queues, application, keys, stream head, events).
// A batch of starts only sends its check, UPDATE and COMMIT as one text: one round trip
// (start-frames.ts applyStartsAlone).
// The starts are applied by start-frames.ts, the results by result-frames.ts (what each decides:
// result-decision.ts). Results advance their workflow runs (step-advance.ts), then hand a released
// key to its next task (handoff.ts) and an unkeyed attempt's slot to the next task of its queue for
// the same session (refill.ts) in the same transaction.
// Each frame gets its own answer: a refused item (NOT_FOUND, LEASE_LOST, STATE_CONFLICT,
// PAYLOAD_TOO_LARGE, UNAUTHENTICATED) is decided before anything is written for it, so it needs no
// savepoint; any other failure fails the transaction, which is retried whole on a deadlock, and a
// batch that still fails is run again item by item, so only the item that cannot commit fails.
import { OrbitError } from '@orbit/protocol/errors';
import { isId } from '@orbit/protocol/ids';
import { MAX_OUTPUT_BYTES } from '@orbit/protocol/limits';
import { liveCredentialsWithClockOf, liveCredentialsWithClockSql } from '../db/credentials.js';
import type { ResultRow } from '../db/attempt-batches.js';
import { queryAll } from '../db/pipeline.js';
import type { RowDataPacket } from 'mysql2/promise';
import { isDatabaseRefusal, withTransaction, type Tx, type Pool } from '../db/pool.js';
import { poolBudget } from '../db/packet-budget.js';
import { coalesce, type Coalesced } from './coalesce.js';
import { PermitLedger } from './ledger.js';
import { completeHandoffs, planHandoffs, type Delivery, type HandoffHost, type HandoffPlan, type ReleasedKey } from './handoff.js';
import type { SlotReservation } from './slot-reservation.js';
import { planRefills, type FreedSlot } from './refill.js';
import { QueueHints } from './queue-hints.js';
import { refusalOf } from './ledger.js';
import { advanceSteps } from './step-advance.js';
import { fail, outputJson, type FrameCommand, type FrameOutcome } from './frame-commands.js';
import { applyStartsAlone, checkedStarts } from './start-frames.js';
import { applyResults, resultRowsSql } from './result-frames.js';

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
  // Every slot reservation the transaction takes (session-slots.ts); those its deliveries do not
  // carry — a key exhausted, a credential revoked, no candidate, a retry, a rollback — are
  // released when it ends. The delivered ones commit at delivery.
  const taken: SlotReservation[] = [];
  const releaseAll = (delivered: ReadonlySet<SlotReservation> = new Set()) => {
    for (const slot of taken.splice(0)) if (!delivered.has(slot)) slot.release();
  };
  const record = <T extends { slot: SlotReservation } | null>(to: T): T => {
    if (to) taken.push(to.slot);
    return to;
  };
  const reserving: HandoffHost | undefined = host && {
    reserve: (t) => record(host.reserve(t)),
    reserveFreed: (sessionId, attemptId) => record(host.reserveFreed(sessionId, attemptId)),
    deliver: (d) => host.deliver(d),
  };
  /** The ledger of the transaction's last try: its permit checks fail at the COMMIT (refusalOf). */
  let ledger: PermitLedger | null = null;
  try {
    const tx = await withTransaction(pool, 'frames', (c) => {
      releaseAll(); // a deadlock retry starts over
      ledger = new PermitLedger();
      return batchInTx(c, cmds, reserving ? { host: reserving, hints } : null, ledger);
    });
    const r = answers(tx);
    releaseAll(new Set(r.handoffs.map((d) => d.slot)));
    return r;
  } catch (err) {
    releaseAll();
    const refused = refusalOf(err, ledger);
    if (!refused) throw err;
    // A queue of a hand-off or refill was paused or retired meanwhile (or is over a lowered
    // limit): the same batch without them, and that queue is skipped for a while.
    hints.markRefused(refused.queueIds);
    return answers(await withTransaction(pool, 'frames', (c) => batchInTx(c, cmds, null, new PermitLedger())));
  }
}

/** What one frame transaction did: each frame's outcome as decided, the key hand-offs and refills
 * it committed (delivered after the commit), and the queues of the workflow steps it advanced. */
interface FrameTransaction {
  outcomes: FrameOutcome[];
  handedOff: Delivery[];
  refilled: Delivery[];
  stepQueues: string[];
}

/** The frames' answers: a result whose key was handed off or whose slot was refilled freed no
 * permit (the successor took it back), so no claim round needs waking for its queue (measured:
 * 0.64 rounds per task on ten hot keys, 99 % empty, before that rule); the queues of advanced
 * workflow steps are woken by the first accepted result. */
function answers(tx: FrameTransaction): FrameBatchResult {
  const handed = new Set(tx.handedOff.map((d) => d.follows));
  const refilled = new Set(tx.refilled.map((d) => d.follows));
  let stepQueues = tx.stepQueues;
  const outcomes = tx.outcomes.map((o): FrameOutcome => {
    if (!o?.ok || o.kind !== 'result') return o;
    let answer = o;
    if (!o.reply.deduplicated && handed.has(o.reply.attempt_id)) answer = { ...o, freedQueues: [], handedOff: true };
    else if (!o.reply.deduplicated && refilled.has(o.reply.attempt_id)) answer = { ...o, freedQueues: [], refilled: true };
    if (stepQueues.length === 0) return answer;
    const first = { ...answer, freedQueues: [...answer.freedQueues, ...stepQueues] };
    stepQueues = [];
    return first;
  });
  return { outcomes, handoffs: [...tx.handedOff, ...tx.refilled] };
}

async function batchInTx(
  c: Tx,
  cmds: FrameCommand[],
  successors: { host: HandoffHost; hints: QueueHints } | null,
  ledger: PermitLedger,
): Promise<FrameTransaction> {
  const out: FrameOutcome[] = new Array(cmds.length);
  const released: ReleasedKey[] = [];
  const freed: FreedSlot[] = [];
  if (cmds.every((x) => x.kind === 'start')) {
    // Starts only: one round trip (start-frames.ts); nothing else to write or hand off.
    await applyStartsAlone(c, cmds as Extract<FrameCommand, { kind: 'start' }>[], out);
    return { outcomes: out, handedOff: [], refilled: [], stepQueues: [] };
  }
  // One round trip for the batch's reads: the credential check with the database clock (left in
  // @orbit_now), the starts' UPDATE (each start's credential checked by the statement itself) and
  // the results' locking read (3 round trips before; docs/benchmarks.md, "The hot-key turnover").
  // The rows of a result whose credential turns out revoked are locked but not written.
  const tooLarge = (f: Extract<FrameCommand, { kind: 'result' }>['frame']) => Buffer.byteLength(outputJson(f) ?? '') > MAX_OUTPUT_BYTES;
  const startItems: { i: number; cmd: Extract<FrameCommand, { kind: 'start' }> }[] = [];
  const resultItems: { i: number; cmd: Extract<FrameCommand, { kind: 'result' }> }[] = [];
  cmds.forEach((cmd, i) => {
    if (cmd.kind === 'start' ? !isId(cmd.attemptId) : !isId(cmd.frame.attempt_id) || tooLarge(cmd.frame)) return;
    if (cmd.kind === 'start') startItems.push({ i, cmd });
    else resultItems.push({ i, cmd });
  });
  const starts = await checkedStarts(c, startItems);
  const reads = await queryAll(c, [
    liveCredentialsWithClockSql([...new Set(cmds.map((x) => x.who.credentialId))]),
    ...starts.update,
    ...(resultItems.length > 0 ? [resultRowsSql(resultItems)] : []),
  ]);
  const { live, now } = liveCredentialsWithClockOf(reads[0]![0] as RowDataPacket[]);
  const changed = starts.update.length > 0 ? (reads[1]![0] as { affectedRows: number }).affectedRows : 0;
  const locked = resultItems.length > 0 ? (reads[reads.length - 1]![0] as ResultRow[]) : [];
  cmds.forEach((cmd, i) => {
    const attemptId = cmd.kind === 'start' ? cmd.attemptId : cmd.frame.attempt_id;
    if (!live.has(cmd.who.credentialId)) out[i] = { ok: false, error: new OrbitError('UNAUTHENTICATED', 'credential revoked') };
    else if (!isId(attemptId)) out[i] = fail('NOT_FOUND', 'unknown attempt', attemptId);
    else if (cmd.kind === 'result' && tooLarge(cmd.frame)) out[i] = fail('PAYLOAD_TOO_LARGE', `output over ${MAX_OUTPUT_BYTES} bytes`, attemptId);
  });
  await starts.answer(live, now, changed, out);
  const liveResults = resultItems.filter((x) => live.has(x.cmd.who.credentialId));
  await applyResults(c, ledger, liveResults, locked, now, out, released, freed);
  // Workflow steps whose tasks changed advance first (nothing for plain tasks): a failed element's
  // WAITING siblings are CANCELLED before a hand-off or refill reads its successors, so neither
  // leases a task its step has already cancelled (workflows.md "Advancement"). Its cancels' waiting
  // rows and keys are written by the key phase below, with the results' own.
  const stepQueues = await advanceSteps(c, ledger);
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
    );
    refills = await planRefills(c, host, ledger, freed, now, hints);
  }
  // Keys first, then the hand-off and refill attempts, then the hot rows to the commit (lock order).
  await ledger.flushKeys(c);
  const delivered = await completeHandoffs(c, ledger, [...plans, ...refills], now);
  await ledger.flushCounters(c);
  return {
    outcomes: out,
    handedOff: delivered.filter((d) => !d.slot.replaces),
    refilled: delivered.filter((d) => d.slot.replaces),
    stepQueues,
  };
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
        for (const d of r.handoffs) host!.deliver(d);
        const refills = r.handoffs.filter((d) => d.slot.replaces).length;
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
