// Group commit per application: items that arrive while a transaction runs gather and go into
// the next one, so under load many commands share one transaction and one commit, and a lone
// item still commits at once (no timer delay). Items are grouped by a key — the application —
// because every transaction must touch one application's rows only (dispatch.md, "Scale-out"):
// a coalesced batch never mixes applications.
export type GroupRunner<I, O> = (group: string, items: I[]) => Promise<O[]>;

interface Pending<I, O> {
  item: I;
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
  ) {}

  submit(group: string, item: I): Promise<O> {
    return this.submitAll(group, [item])[0]!;
  }

  /** Several items that arrived together (one request): queued at once, so they share a
   * transaction instead of the first one leaving alone. */
  submitAll(group: string, items: I[]): Promise<O>[] {
    let q = this.waiting.get(group);
    if (!q) this.waiting.set(group, (q = []));
    const out = items.map((item) => new Promise<O>((resolve, reject) => q.push({ item, resolve, reject })));
    this.pump();
    return out;
  }

  private pump(): void {
    while (this.running < this.maxParallel && this.waiting.size > 0) {
      // The group that has waited longest (first in Map order); re-queued at the back if items remain.
      const [group, q] = this.waiting.entries().next().value as [string, Pending<I, O>[]];
      this.waiting.delete(group);
      const batch = q.splice(0, this.maxBatch);
      if (q.length > 0) this.waiting.set(group, q);
      this.running++;
      void this.execute(group, batch).finally(() => {
        this.running--;
        this.pump();
      });
    }
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
