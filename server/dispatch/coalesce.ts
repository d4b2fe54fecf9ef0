// The one coalescer (graphile-worker's `batch()` is the model): `coalesce(runBatch, options)`
// returns a function with the signature of running one item, and the callers that are handed it
// never know that items arriving while a batch runs gather and go into the next one. Under load
// many commands share one transaction and one commit; a lone item still runs at once (no timer
// delay). Items are grouped by a key — the application — because every transaction must touch one
// application's rows only (dispatch.md, "Scale-out"): a batch never mixes groups.
// A batch is bounded by its number of items and, with a weight, by the bytes of the values its
// items carry (results' outputs, submits' payloads): at most one packet's worth of values per
// transaction (db/packet-budget.ts), so a burst of large items becomes several transactions of
// bounded size, memory and lock time. An item heavier than the bound goes alone.
// Its users: submits (dispatch/submit.ts), start and result frames (dispatch/frame-committer.ts),
// and receipt-bearing HTTP commands through `coalescedTransactions` (one SAVEPOINT per item:
// dispatch/coalesce-tx.ts).

/** Runs one batch of one group's items; answers each item, in order. Throwing fails the batch's
 * every item with that error. */
export type BatchRunner<I, O> = (group: string, items: I[]) => Promise<O[]>;

/** The bytes of values an item brings into its transaction, and the most one batch may carry
 * (read per batch: the pool's budget is known once the gateway read it). */
export interface BatchWeight<I> {
  of: (item: I) => number;
  max: () => number;
}

export interface CoalesceOptions<I> {
  /** Items in one batch at most. */
  maxBatch: number;
  /** Batches in flight at once over all groups (bounded by the pool). */
  maxParallel: number;
  /** Batches of one group in flight at once (default: maxParallel). 1 when a group's batches
   * serialize on the same rows anyway (submits: the application's counter and its queue rows are
   * updated by every batch), so that a second batch in flight only splits the items that would
   * have shared one transaction; other groups still run beside it. */
  maxPerGroup?: number;
  /** With maxPerGroup: a group past it still starts a batch when at least this many items wait —
   * a batch that large gains nothing more by waiting to grow, and running it beside the one in
   * flight overlaps its statement building with the database's work on the other. */
  overlapFrom?: number;
  /** Bounds a batch by the summed weight of its items as well (at least one item per batch). */
  weight?: BatchWeight<I>;
}

/** Runs one item in the next batch of its group. */
export interface Coalesced<I, O> {
  (group: string, item: I): Promise<O>;
  /** Several items that arrived together (one request): queued at once, so they share a batch
   * instead of the first one leaving alone. */
  all(group: string, items: I[]): Promise<O>[];
}

interface Pending<I, O> {
  item: I;
  weight: number;
  resolve: (o: O) => void;
  reject: (e: unknown) => void;
}

export function coalesce<I, O>(runBatch: BatchRunner<I, O>, options: CoalesceOptions<I>): Coalesced<I, O> {
  const { maxBatch, maxParallel, weight } = options;
  const maxPerGroup = options.maxPerGroup ?? maxParallel;
  const overlapFrom = options.overlapFrom ?? Infinity;
  /** group → items waiting, in arrival order; Map order = the order groups became non-empty. */
  const waiting = new Map<string, Pending<I, O>[]>();
  let running = 0;
  /** group → its batches in flight (only groups with one or more). */
  const runningOf = new Map<string, number>();

  /** How many of the waiting items the next batch takes: up to maxBatch, and (with a weight)
   * while their weights stay within the bound — at least one. */
  const batchLength = (q: Pending<I, O>[]): number => {
    const n = Math.min(q.length, maxBatch);
    if (!weight) return n;
    const max = weight.max();
    let total = q[0]!.weight;
    let i = 1;
    while (i < n && total + q[i]!.weight <= max) total += q[i++]!.weight;
    return i;
  };

  const execute = async (group: string, batch: Pending<I, O>[]): Promise<void> => {
    try {
      const out = await runBatch(
        group,
        batch.map((p) => p.item),
      );
      batch.forEach((p, i) => p.resolve(out[i]!));
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  };

  /** The group that has waited longest (first in Map order) among those below maxPerGroup or with
   * overlapFrom items waiting; the scan passes at most the groups in flight (fewer than maxParallel). */
  const nextGroup = (): [string, Pending<I, O>[]] | undefined => {
    for (const entry of waiting) if ((runningOf.get(entry[0]) ?? 0) < maxPerGroup || entry[1].length >= overlapFrom) return entry;
    return undefined;
  };

  const pump = (): void => {
    while (running < maxParallel && waiting.size > 0) {
      const next = nextGroup();
      if (!next) return;
      // Re-queued at the back if items remain.
      const [group, q] = next;
      waiting.delete(group);
      const batch = q.splice(0, batchLength(q));
      if (q.length > 0) waiting.set(group, q);
      running++;
      runningOf.set(group, (runningOf.get(group) ?? 0) + 1);
      void execute(group, batch).finally(() => {
        running--;
        const left = runningOf.get(group)! - 1;
        if (left > 0) runningOf.set(group, left);
        else runningOf.delete(group);
        pump();
      });
    }
  };

  const all = (group: string, items: I[]): Promise<O>[] => {
    let q = waiting.get(group);
    if (!q) waiting.set(group, (q = []));
    const out = items.map((item) => new Promise<O>((resolve, reject) => q.push({ item, weight: weight?.of(item) ?? 0, resolve, reject })));
    pump();
    return out;
  };
  const one = (group: string, item: I): Promise<O> => all(group, [item])[0]!;
  return Object.assign(one, { all });
}
