// Work that needs a transaction of its group and may share it. In `coalescedTransactions` each
// piece, a lone one too, runs under its own SAVEPOINT, so a failing piece rolls back alone; any
// other failure of the shared transaction re-runs every piece alone, so one bad piece cannot fail
// its neighbours.
import { isDatabaseRefusal, withTransaction, type Tx, type Pool, type TxPath } from '../db/pool.js';
import { coalesce } from './coalesce.js';

export type TxWork<T> = (tx: Tx) => Promise<T>;

/** Runs `work` in a committed transaction of `group`'s rows. */
export type InTransaction = <T>(group: string, work: TxWork<T>) => Promise<T>;

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

export function coalescedTransactions(
  pool: Pool,
  options: { path: TxPath; maxBatch: number; maxParallel: number; onBatch?: (size: number, seconds: number) => void },
): InTransaction {
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
    let settled: Settled[] = [];
    try {
      await withTransaction(pool, path, async (c) => {
        settled = [];
        for (const work of batch) {
          await c.query('SAVEPOINT item');
          try {
            settled.push({ ok: true, value: await work(c) });
          } catch (error) {
            if (isDatabaseRefusal(error)) throw error;
            await c.query('ROLLBACK TO SAVEPOINT item');
            settled.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      // A database refusal is every piece's answer; any other failure (never a piece's own): each alone.
      if (isDatabaseRefusal(error)) return batch.map(() => ({ ok: false, error }));
      return Promise.all(batch.map(alone));
    }
    onBatch(batch.length, Number(process.hrtime.bigint() - started) / 1e9);
    return settled;
  };

  const run = coalesce(runBatch, { maxBatch: options.maxBatch, maxParallel: options.maxParallel });
  return async <T>(group: string, work: TxWork<T>): Promise<T> => {
    const s = await run(group, work);
    if (!s.ok) throw s.error;
    return s.value as T;
  };
}
