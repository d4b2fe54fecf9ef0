// Group commit per application: items that arrive while a transaction runs gather and go into
// the next one, so under load many commands share one transaction and one commit, and a lone
// item still commits at once (no timer delay). Items are grouped by a key — the application —
// because every transaction must touch one application's rows only (dispatch.md, "Scale-out"):
// a coalesced batch never mixes applications.
// A batch is bounded by its number of items and, with a weight, by the bytes of the values its
// items carry (results' outputs, submits' payloads): at most one packet's worth of values per
// transaction (db/packet-budget.ts), so a burst of large items becomes several transactions of
// bounded size, memory and lock time. An item heavier than the bound goes alone.
export type GroupRunner<I, O> = (group: string, items: I[]) => Promise<O[]>;

/** The bytes of values an item brings into its transaction, and the most one batch may carry
 * (read per batch: the pool's budget is known once the gateway read it). */
export interface BatchWeight<I> {
  of: (item: I) => number;
  max: () => number;
}

interface Pending<I, O> {
  item: I;
  weight: number;
  resolve: (o: O) => void;
  reject: (e: unknown) => void;
}

export class GroupCommitter<I, O> {
  /** group → items waiting, in arrival order; Map order = the order groups became non-empty. */
  private readonly waiting = new Map<string, Pending<I, O>[]>();
  private running = 0;

  constructor(
    private readonly runner: GroupRunner<I, O>,
    private readonly maxBatch: number,
    /** Transactions in flight at once over all groups (bounded by the pool). */
    private readonly maxParallel: number,
    private readonly weight?: BatchWeight<I>,
  ) {}

  submit(group: string, item: I): Promise<O> {
    return this.submitAll(group, [item])[0]!;
  }

  /** Several items that arrived together (one request): queued at once, so they share a
   * transaction instead of the first one leaving alone. */
  submitAll(group: string, items: I[]): Promise<O>[] {
    let q = this.waiting.get(group);
    if (!q) this.waiting.set(group, (q = []));
    const out = items.map((item) => new Promise<O>((resolve, reject) => q.push({ item, weight: this.weight?.of(item) ?? 0, resolve, reject })));
    this.pump();
    return out;
  }

  private pump(): void {
    while (this.running < this.maxParallel && this.waiting.size > 0) {
      // The group that has waited longest (first in Map order); re-queued at the back if items remain.
      const [group, q] = this.waiting.entries().next().value as [string, Pending<I, O>[]];
      this.waiting.delete(group);
      const batch = q.splice(0, this.batchLength(q));
      if (q.length > 0) this.waiting.set(group, q);
      this.running++;
      void this.execute(group, batch).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  /** How many of the waiting items the next batch takes: up to maxBatch, and (with a weight) while
   * their weights stay within the bound — at least one. */
  private batchLength(q: Pending<I, O>[]): number {
    const n = Math.min(q.length, this.maxBatch);
    if (!this.weight) return n;
    const max = this.weight.max();
    let total = q[0]!.weight;
    let i = 1;
    while (i < n && total + q[i]!.weight <= max) total += q[i++]!.weight;
    return i;
  }

  private async execute(group: string, batch: Pending<I, O>[]): Promise<void> {
    try {
      const out = await this.runner(
        group,
        batch.map((p) => p.item),
      );
      batch.forEach((p, i) => p.resolve(out[i]!));
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }
}
