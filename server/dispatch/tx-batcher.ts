// Coalesces frames that arrive close together into one transaction: while a batch commits, the
// next one gathers (group commit at the application level, no timer delay), so under load many
// start/result frames share one commit and one fsync, and a lone frame still commits at once.
// Each item runs under its own SAVEPOINT with its own permit ledger: an item that fails (lease
// lost, conflict) is rolled back alone and answered with its error; the others commit. Every
// item is answered only after the commit. A deadlock or lost connection fails the whole
// transaction, which withTransaction retries from scratch (each item's work is re-run).
import { OrbitError } from '@orbit/protocol/errors';
import { isRetryableDbError } from '../db/errors.js';
import { withTransaction, isConnectionError, rollbackToSavepoint, savepoint, type Conn, type Pool } from '../db/pool.js';
import { PermitLedger } from './ledger.js';

type ItemFn<T> = (c: Conn, ledger: PermitLedger) => Promise<T>;

interface Item {
  fn: ItemFn<unknown>;
  resolve: (v: { value: unknown; ledger: PermitLedger }) => void;
  reject: (e: unknown) => void;
}

type Outcome = { ok: true; value: unknown; ledger: PermitLedger } | { ok: false; error: unknown };

function mustAbortTransaction(err: unknown): boolean {
  return isRetryableDbError(err) || isConnectionError(err);
}

export class TxBatcher {
  /** application → items waiting. A batch never mixes applications: every transaction touches one
   * application's rows (dispatch.md, "Scale-out"). Map order = the order groups became non-empty. */
  private readonly waiting = new Map<string, Item[]>();
  private running = 0;

  constructor(
    private readonly pool: Pool,
    private readonly maxBatch = 128,
    private readonly maxParallel = 2,
    private readonly onBatch: (size: number, seconds: number) => void = () => {},
    /** false when every item throws its own (OrbitError) failures before writing anything, as
     * start and result do: then no SAVEPOINT per item is needed, and any other error fails the
     * batch, whose items are then run one by one. */
    private readonly savepoints = true,
  ) {}

  /** Runs `fn` in the next transaction of `applicationId`'s items. */
  run<T>(applicationId: string, fn: ItemFn<T>): Promise<{ value: T; ledger: PermitLedger }> {
    return new Promise((resolve, reject) => {
      let q = this.waiting.get(applicationId);
      if (!q) this.waiting.set(applicationId, (q = []));
      q.push({ fn, resolve: resolve as Item['resolve'], reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.running < this.maxParallel && this.waiting.size > 0) {
      const [group, q] = this.waiting.entries().next().value as [string, Item[]];
      this.waiting.delete(group);
      const batch = q.splice(0, this.maxBatch);
      if (q.length > 0) this.waiting.set(group, q);
      this.running++;
      void this.execute(batch).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  private async execute(batch: Item[]): Promise<void> {
    const started = process.hrtime.bigint();
    let outcomes: Outcome[] = [];
    try {
      await withTransaction(this.pool, 'command', async (c) => {
        outcomes = [];
        const merged = new PermitLedger();
        for (const item of batch) {
          const sp = this.savepoints && batch.length > 1;
          if (sp) await savepoint(c, 'item');
          const ledger = new PermitLedger();
          try {
            const value = await item.fn(c, ledger);
            merged.merge(ledger);
            outcomes.push({ ok: true, value, ledger });
          } catch (err) {
            if (mustAbortTransaction(err) || batch.length === 1) throw err;
            if (sp) await rollbackToSavepoint(c, 'item');
            else if (!(err instanceof OrbitError)) throw err;
            outcomes.push({ ok: false, error: err });
          }
        }
        await merged.flush(c);
      });
    } catch (err) {
      // A single item's own error (the batch of one) or a transaction-wide failure.
      if (batch.length > 1 && !mustAbortTransaction(err) && !(err instanceof OrbitError)) {
        // Unexpected failure of the shared flush: answer each item alone so one bad item cannot
        // fail its neighbours.
        await Promise.all(batch.map((item) => this.runAlone(item)));
        return;
      }
      for (const item of batch) item.reject(err);
      return;
    }
    this.onBatch(batch.length, Number(process.hrtime.bigint() - started) / 1e9);
    outcomes.forEach((o, i) => (o.ok ? batch[i]!.resolve({ value: o.value, ledger: o.ledger }) : batch[i]!.reject(o.error)));
  }

  private async runAlone(item: Item): Promise<void> {
    try {
      let ledger = new PermitLedger();
      const value = await withTransaction(this.pool, 'command', async (c) => {
        ledger = new PermitLedger();
        const v = await item.fn(c, ledger);
        await ledger.flush(c);
        return v;
      });
      item.resolve({ value, ledger });
    } catch (err) {
      item.reject(err);
    }
  }
}
