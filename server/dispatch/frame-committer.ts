// start and result frames of every session of a node, coalesced per application into shared
// transactions of batch-shaped statements (db/attempt-batches.ts). Whatever k starts and m results:
// 1 credential check with the clock, 1 UPDATE for the starts, 1 locking read of the results' rows
// (these three in one round trip; a batch of starts only sends its COMMIT with them), 1 UPDATE of
// attempts, 1 of tasks, then the ledger's flush. Results grant nothing: what they release wakes the
// dispatcher's claim round after the commit. A refused frame is decided before anything is written
// for it, so it needs no savepoint; a batch that fails otherwise runs again frame by frame.
import { OrbitError } from '@orbit/protocol/errors';
import { isId } from '@orbit/protocol/ids';
import { MAX_OUTPUT_BYTES } from '@orbit/protocol/limits';
import { liveCredentialsWithClockOf, liveCredentialsWithClockSql } from '../db/credentials.js';
import type { ResultRow } from '../db/attempt-batches.js';
import { commitWithAll, queryAll } from '../db/pipeline.js';
import type { RowDataPacket } from 'mysql2/promise';
import { isDatabaseRefusal, type Tx, type Pool } from '../db/pool.js';
import { poolBudget } from '../db/packet-budget.js';
import { coalesce } from './coalesce.js';
import { withLedgerTx, type PermitLedger, type StepAdvancer } from './ledger.js';
import { fail, type FrameCommand, type FrameOutcome } from './frame-commands.js';
import { checkedStarts } from './start-frames.js';
import { applyResults, resultRowsSql } from './result-frames.js';

/** One transaction for a batch of one application's frames; one that fails for another reason than
 * a database refusal runs again one frame per transaction, so only the frame that cannot commit
 * fails (a batch of starts that committed before failing is safe to run again: a repeated start is
 * answered from the row). A refusal is not: the database is busy or gone, and the sessions resume. */
export async function runFrameBatch(pool: Pool, advance: StepAdvancer, cmds: FrameCommand[]): Promise<{ outcomes: FrameOutcome[] }> {
  try {
    return { outcomes: await runFrameTransaction(pool, cmds, advance) };
  } catch (err) {
    if (cmds.length === 1 || isDatabaseRefusal(err)) throw err;
    const out: FrameOutcome[] = [];
    for (const cmd of cmds) {
      try {
        out.push((await runFrameTransaction(pool, [cmd], advance))[0]!);
      } catch (e) {
        if (isDatabaseRefusal(e)) throw e;
        out.push({ ok: false, thrown: e });
      }
    }
    return { outcomes: out };
  }
}

async function runFrameTransaction(pool: Pool, cmds: FrameCommand[], advance: StepAdvancer): Promise<FrameOutcome[]> {
  const { value: out, ledger } = await withLedgerTx(pool, 'frames', advance, (c, ledger) => batchInTx(c, cmds, ledger));
  // The queues the workflow advancement gave new tasks are woken with the first accepted result.
  const own = new Set(out.flatMap((o) => (o?.ok && o.kind === 'result' ? o.freedQueues : [])));
  const more = [...ledger.freedQueues].filter((q) => !own.has(q));
  const first = out.findIndex((o) => o?.ok && o.kind === 'result');
  if (more.length > 0 && first >= 0) {
    const o = out[first] as Extract<FrameOutcome, { kind: 'result' }>;
    out[first] = { ...o, freedQueues: [...o.freedQueues, ...more] };
  }
  return out;
}

async function batchInTx(c: Tx, cmds: FrameCommand[], ledger: PermitLedger): Promise<FrameOutcome[]> {
  const out: FrameOutcome[] = new Array(cmds.length);
  // One round trip: the credential check with the clock, the starts' UPDATE (which checks each
  // start's credential) and the results' locking read (a revoked credential's rows are locked but
  // not written); a batch of starts sends its COMMIT with them.
  const tooLarge = (cmd: Extract<FrameCommand, { kind: 'result' }>) => Buffer.byteLength(cmd.output ?? '') > MAX_OUTPUT_BYTES;
  const startItems: { i: number; cmd: Extract<FrameCommand, { kind: 'start' }> }[] = [];
  const resultItems: { i: number; cmd: Extract<FrameCommand, { kind: 'result' }> }[] = [];
  cmds.forEach((cmd, i) => {
    if (cmd.kind === 'start' ? !isId(cmd.attemptId) : !isId(cmd.frame.attempt_id) || tooLarge(cmd)) return;
    if (cmd.kind === 'start') startItems.push({ i, cmd });
    else resultItems.push({ i, cmd });
  });
  const starts = await checkedStarts(c, startItems);
  const statements = [
    liveCredentialsWithClockSql([...new Set(cmds.map((x) => x.who.credentialId))]),
    ...starts.update,
    ...(resultItems.length > 0 ? [resultRowsSql(resultItems)] : []),
  ];
  const reads = cmds.every((x) => x.kind === 'start') ? await commitWithAll(c, statements) : await queryAll(c, statements);
  const { live, now } = liveCredentialsWithClockOf(reads[0]![0] as RowDataPacket[]);
  const changed = starts.update.length > 0 ? (reads[1]![0] as { affectedRows: number }).affectedRows : 0;
  const locked = resultItems.length > 0 ? (reads[reads.length - 1]![0] as ResultRow[]) : [];
  cmds.forEach((cmd, i) => {
    const attemptId = cmd.kind === 'start' ? cmd.attemptId : cmd.frame.attempt_id;
    if (!live.has(cmd.who.credentialId)) out[i] = { ok: false, error: new OrbitError('UNAUTHENTICATED', 'credential revoked') };
    else if (!isId(attemptId)) out[i] = fail('NOT_FOUND', 'unknown attempt', attemptId);
    else if (cmd.kind === 'result' && tooLarge(cmd)) out[i] = fail('PAYLOAD_TOO_LARGE', `output over ${MAX_OUTPUT_BYTES} bytes`, attemptId);
  });
  await starts.answer(live, now, changed, out);
  const liveResults = resultItems.filter((x) => live.has(x.cmd.who.credentialId));
  await applyResults(c, ledger, liveResults, locked, now, out);
  return out;
}

/** The bytes of a frame's values stored by its transaction (a result's output and error message;
 * a start carries none): the weight that bounds a batch (coalesce.ts). */
function resultBytes(cmd: FrameCommand): number {
  if (cmd.kind !== 'result') return 0;
  return Buffer.byteLength(cmd.output ?? '') + Buffer.byteLength(cmd.frame.error?.message ?? '');
}

export type FrameCommitter = (applicationId: string, cmd: FrameCommand) => Promise<FrameOutcome>;

export function frameCommitter(pool: Pool, advance: StepAdvancer, onBatch: (size: number, seconds: number) => void): FrameCommitter {
  return coalesce(
    async (_app, cmds) => {
      const started = process.hrtime.bigint();
      const { outcomes } = await runFrameBatch(pool, advance, cmds);
      onBatch(cmds.length, Number(process.hrtime.bigint() - started) / 1e9);
      return outcomes;
    },
    { maxBatch: 256, maxParallel: 2, weight: { of: resultBytes, max: () => poolBudget(pool).bytes } },
  );
}
