// The one coalescer: items that arrive while a batch runs gather into the next one; a lone item
// runs at once. Groups are applications, since a transaction touches one application's rows.
// Waiting groups take turns, so a flooding group delays another by one batch, not its backlog.

export interface CoalesceOptions<I> {
  maxBatch: number;
  maxParallel: number;
  /** 1 when a group's batches serialize on the same rows anyway. */
  maxPerGroup?: number;
  /** A group at maxPerGroup still starts a batch once this many items wait. */
  overlapFrom?: number;
  /** Bounds a batch by its values' bytes, so large items become several bounded transactions. */
  weight?: { of: (item: I) => number; max: () => number };
}

export interface Coalesced<I, O> {
  (group: string, item: I): Promise<O>;
  all(group: string, items: I[]): Promise<O>[];
}

interface Pending<I, O> {
  item: I;
  weight: number;
  resolve: (o: O) => void;
  reject: (e: unknown) => void;
}

/** `runBatch` answers each item in order; a throw fails every item. It may hand its group's turn
 * to the group's next batch before it settles (`yieldTurn`); it still counts toward maxParallel. */
export function coalesce<I, O>(runBatch: (group: string, items: I[], yieldTurn: () => void) => Promise<O[]>, options: CoalesceOptions<I>): Coalesced<I, O> {
  const { maxBatch, maxParallel, weight } = options;
  const maxPerGroup = options.maxPerGroup ?? maxParallel;
  const overlapFrom = options.overlapFrom ?? Infinity;
  /** Map order is the order groups became non-empty. */
  const waiting = new Map<string, Pending<I, O>[]>();
  let running = 0;
  const runningOf = new Map<string, number>();

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
    let holdsTurn = true;
    const yieldTurn = (): void => {
      if (!holdsTurn) return;
      holdsTurn = false;
      const left = runningOf.get(group)! - 1;
      if (left > 0) runningOf.set(group, left);
      else runningOf.delete(group);
      pump();
    };
    try {
      const items = batch.map((p) => p.item);
      const out = await runBatch(group, items, yieldTurn);
      batch.forEach((p, i) => p.resolve(out[i]!));
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      running--;
      yieldTurn();
      pump();
    }
  };

  const pump = (): void => {
    while (running < maxParallel && waiting.size > 0) {
      // The first waiting group that may start a batch.
      const next = [...waiting].find(([g, q]) => (runningOf.get(g) ?? 0) < maxPerGroup || q.length >= overlapFrom);
      if (!next) return;
      const [group, q] = next;
      waiting.delete(group);
      const batch = q.splice(0, batchLength(q));
      if (q.length > 0) waiting.set(group, q);
      running++;
      runningOf.set(group, (runningOf.get(group) ?? 0) + 1);
      void execute(group, batch);
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

/** Runs `fn` once its group has a turn; the turn is held until `fn` settles. */
export type Admit = <T>(group: string, fn: () => Promise<T>) => Promise<T>;

/** coalesce with batches of one: a fair limiter (`onWaiting`: functions not yet started). */
export function admission(maxParallel: number, maxPerGroup: number, onWaiting: (n: number) => void = () => {}): Admit {
  let waiting = 0;
  const run = coalesce<() => Promise<unknown>, unknown>(
    async (_group, [fn]) => {
      onWaiting(--waiting);
      return [await fn!()];
    },
    { maxBatch: 1, maxParallel, maxPerGroup },
  );
  return <T>(group: string, fn: () => Promise<T>) => {
    onWaiting(++waiting);
    return run(group, fn) as Promise<T>;
  };
}
