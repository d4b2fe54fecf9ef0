// Work that needs a transaction of its group (an application) and may share it: the receipt-bearing
// HTTP commands (server/http/command.ts) are handed an `InTransaction` and never know whether it
// coalesces. Two ways to run it, with the same answers:
//  - `separateTransactions`: each piece of work in its own transaction (tests, tools);
//  - `coalescedTransactions`: pieces that arrive while a batch commits share the next transaction
//    (the one coalescer, dispatch/coalesce.ts), each under its own SAVEPOINT: a piece that fails
//    (a key taken, a 404 found late) is rolled back alone and answered with its error; the others
//    commit. Every piece is answered only after the commit. A deadlock or lost connection fails the
//    whole transaction, which transactionOn retries from scratch (each piece is re-run); any other
//    failure of the shared transaction re-runs every piece alone, so one bad piece cannot fail its
//    neighbours.
import { isDatabaseRefusal, rollbackToSavepoint, savepoint, withTransaction, type Tx, type Pool, type TxPath } from '../db/pool.js';
import { coalesce } from './coalesce.js';

/** A piece of work inside a transaction; its result is handed back after the commit. */
export type TxWork<T> = (tx: Tx) => Promise<T>;

/** Runs `work` inside a committed transaction of `group`'s rows; rejects with its own error (then
 * nothing of it committed). */
export type InTransaction = <T>(group: string, work: TxWork<T>) => Promise<T>;

/** Each piece of work in its own transaction. */
export function separateTransactions(pool: Pool, path: TxPath): InTransaction {
  return (_group, work) => withTransaction(pool, path, work);
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

export interface CoalescedTxOptions {
  path: TxPath;
  maxBatch: number;
  maxParallel: number;
  /** Called after each committed shared transaction with its number of pieces and seconds. */
  onBatch?: (size: number, seconds: number) => void;
}

/** Pieces of one group that arrive together share a transaction, each under a SAVEPOINT. */
export function coalescedTransactions(pool: Pool, options: CoalescedTxOptions): InTransaction {
  const { path, onBatch = () => {} } = options;

  const alone = async (work: TxWork<unknown>): Promise<Settled> => {
    try {
      return { ok: true, value: await withTransaction(pool, path, work) };
    } catch (error) {
      return { ok: false, error };
    }
  };

  const runBatch = async (_group: string, batch: TxWork<unknown>[]): Promise<Settled[]> => {
    const started = process.hrtime.bigint();
    const observed = (out: Settled[]): Settled[] => {
      onBatch(batch.length, Number(process.hrtime.bigint() - started) / 1e9);
      return out;
    };
    // A batch of one is a plain transaction: its failure is its answer.
    if (batch.length === 1) {
      const s = await alone(batch[0]!);
      return s.ok ? observed([s]) : [s];
    }
    let settled: Settled[] = [];
    try {
      await withTransaction(pool, path, async (c) => {
        settled = [];
        for (const work of batch) {
          await savepoint(c, 'item');
          try {
            settled.push({ ok: true, value: await work(c) });
          } catch (error) {
            if (isDatabaseRefusal(error)) throw error;
            await rollbackToSavepoint(c, 'item');
            settled.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      // The database refused the shared transaction after transactionOn's retries: every piece
      // gets that answer. Any other failure of it (never a piece's own, which its savepoint
      // undid): each piece alone.
      if (isDatabaseRefusal(error)) return batch.map(() => ({ ok: false, error }));
      return Promise.all(batch.map(alone));
    }
    return observed(settled);
  };

  const run = coalesce(runBatch, { maxBatch: options.maxBatch, maxParallel: options.maxParallel });
  return async <T>(group: string, work: TxWork<T>): Promise<T> => {
    const s = await run(group, work);
    if (!s.ok) throw s.error;
    return s.value as T;
  };
}
