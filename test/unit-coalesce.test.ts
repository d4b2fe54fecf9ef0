// The one coalescer (server/dispatch/coalesce.ts), River-style: one shared test body run against
// each way the server uses it — submits (500 items, weighed by payload bytes), start/result frames
// (256 items, weighed by output bytes) and receipt-bearing commands (64 items, no weight, under
// dispatch/coalesce-tx.ts). The batch runner here records its batches instead of committing.
// Then the idempotent executor that runs behind the coalesced fast path (dispatch/idempotency.ts).
import { describe, expect, it } from 'vitest';
import { coalesce, type CoalesceOptions } from '../server/dispatch/coalesce.js';
import { ALONE, executeIdempotent } from '../server/dispatch/idempotency.js';

/** An item: its id and its weight (bytes it would carry). */
type Item = { id: number; w: number };

const USES: [string, CoalesceOptions<Item>][] = [
  ['submits', { maxBatch: 500, maxParallel: 2, maxPerGroup: 1, overlapFrom: 100, weight: { of: (i) => i.w, max: () => 1000 } }],
  ['frames', { maxBatch: 256, maxParallel: 2, weight: { of: (i) => i.w, max: () => 1000 } }],
  ['commands', { maxBatch: 64, maxParallel: 2 }],
];

/** A runner that records each batch and holds it until released (to let the next batch gather). */
function recorder(fail?: (items: Item[]) => boolean) {
  const batches: { group: string; ids: number[] }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const gates: (() => void)[] = [];
  const run = async (group: string, items: Item[]): Promise<string[]> => {
    batches.push({ group, ids: items.map((i) => i.id) });
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    await new Promise<void>((r) => gates.push(r));
    inFlight--;
    if (fail?.(items)) throw new Error(`batch of ${items.map((i) => i.id).join(',')} failed`);
    return items.map((i) => `${group}:${i.id}`);
  };
  /** Releases the held batches until every promise settled. */
  const drain = async <T>(ps: Promise<T>[]): Promise<PromiseSettledResult<T>[]> => {
    let done = false;
    const all = Promise.allSettled(ps).then((r) => ((done = true), r));
    while (!done) {
      gates.splice(0).forEach((g) => g());
      await new Promise((r) => setImmediate(r));
    }
    return all;
  };
  return { run, batches, drain, maxInFlight: () => maxInFlight };
}

const items = (from: number, n: number, w = 1): Item[] => Array.from({ length: n }, (_, k) => ({ id: from + k, w }));

describe.each(USES)('the coalescer as used by %s', (_use, opts) => {
  it('answers each item with its own result, in order; a lone item runs at once', async () => {
    const r = recorder();
    const c = coalesce(r.run, opts);
    const lone = c('a', { id: 1, w: 1 });
    // Runs before anything else is queued: no timer delay.
    expect(r.batches).toEqual([{ group: 'a', ids: [1] }]);
    const out = await r.drain([lone, ...c.all('a', items(2, 5))]);
    expect(out.map((o) => (o.status === 'fulfilled' ? o.value : o.reason))).toEqual(['a:1', 'a:2', 'a:3', 'a:4', 'a:5', 'a:6']);
  });

  it('items that arrive while a batch runs share the next batch; groups never mix', async () => {
    const r = recorder();
    const c = coalesce(r.run, opts);
    const ps = [c('a', { id: 1, w: 1 }), c('b', { id: 2, w: 1 })];
    // Both slots busy (maxParallel 2): the rest gather.
    for (const it of items(3, 6)) ps.push(c(it.id % 2 ? 'a' : 'b', it));
    await r.drain(ps);
    expect(r.batches).toEqual([
      { group: 'a', ids: [1] },
      { group: 'b', ids: [2] },
      { group: 'a', ids: [3, 5, 7] },
      { group: 'b', ids: [4, 6, 8] },
    ]);
    expect(r.maxInFlight()).toBe(opts.maxParallel);
  });

  it('a batch holds at most maxBatch items, and with a weight at most its bound (a heavier item alone)', async () => {
    const r = recorder();
    const c = coalesce(r.run, opts);
    const n = opts.maxBatch + 3;
    const out = await r.drain([c('a', { id: 0, w: 1 }), ...c.all('a', items(1, n))]);
    expect(out.every((o) => o.status === 'fulfilled')).toBe(true);
    expect(r.batches.slice(1).map((b) => b.ids.length)).toEqual(opts.weight ? [...chunks(n, Math.min(opts.maxBatch, 1000))] : [opts.maxBatch, 3]);
    if (opts.weight) {
      const r2 = recorder();
      const c2 = coalesce(r2.run, opts);
      const ws = [500, 500, 500, 2000, 1, 2, 3];
      await r2.drain(
        c2.all(
          'a',
          ws.map((w, id) => ({ id, w })),
        ),
      );
      expect(r2.batches.map((b) => b.ids)).toEqual([[0, 1], [2], [3], [4, 5, 6]]);
    }
  });

  it('a failing batch rejects its own items only; the next batches run', async () => {
    const r = recorder((b) => b.some((i) => i.id === 3));
    const c = coalesce(r.run, opts);
    const ps = [c('a', { id: 1, w: 1 }), c('b', { id: 2, w: 1 }), c('a', { id: 3, w: 1 }), c('a', { id: 4, w: 1 }), c('b', { id: 5, w: 1 })];
    const out = await r.drain(ps);
    expect(out.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled']);
    // Later items of the failed group still run.
    const after = await r.drain([c('a', { id: 6, w: 1 })]);
    expect(after[0]).toEqual({ status: 'fulfilled', value: 'a:6' });
  });
});

describe('maxPerGroup: batches of one group in flight at once', () => {
  it("a group's next batch waits for its batch in flight, gathering what arrives; another group runs beside it", async () => {
    const r = recorder();
    const c = coalesce(r.run, { maxBatch: 500, maxParallel: 2, maxPerGroup: 1 });
    const ps = [c('a', { id: 1, w: 1 }), c('a', { id: 2, w: 1 })];
    // One batch of `a` in flight: item 2 waits although a slot is free.
    expect(r.batches).toEqual([{ group: 'a', ids: [1] }]);
    ps.push(c('a', { id: 3, w: 1 }), c('b', { id: 4, w: 1 }));
    // `b` takes the free slot at once, past `a`'s waiting items.
    expect(r.batches).toEqual([
      { group: 'a', ids: [1] },
      { group: 'b', ids: [4] },
    ]);
    const out = await r.drain(ps);
    expect(out.map((o) => (o.status === 'fulfilled' ? o.value : o.reason))).toEqual(['a:1', 'a:2', 'a:3', 'b:4']);
    // Items 2 and 3 gathered into one batch after item 1's.
    expect(r.batches[2]).toEqual({ group: 'a', ids: [2, 3] });
    expect(r.batches).toHaveLength(3);
  });

  it('overlapFrom: a group past maxPerGroup starts a batch beside its own once that many items wait', async () => {
    const r = recorder();
    const c = coalesce(r.run, { maxBatch: 500, maxParallel: 2, maxPerGroup: 1, overlapFrom: 3 });
    const ps = [c('a', { id: 1, w: 1 }), ...c.all('a', items(2, 2))];
    // Two items wait (below 3): they wait for batch 1.
    expect(r.batches).toEqual([{ group: 'a', ids: [1] }]);
    ps.push(...c.all('a', items(4, 2)));
    // Four wait: a second batch of `a` takes the free slot.
    expect(r.batches).toEqual([
      { group: 'a', ids: [1] },
      { group: 'a', ids: [2, 3, 4, 5] },
    ]);
    await r.drain(ps);
  });

  it('without it, a group uses every slot (frames, commands)', async () => {
    const r = recorder();
    const c = coalesce(r.run, { maxBatch: 500, maxParallel: 2 });
    const ps = [c('a', { id: 1, w: 1 }), c('a', { id: 2, w: 1 })];
    expect(r.batches).toEqual([
      { group: 'a', ids: [1] },
      { group: 'a', ids: [2] },
    ]);
    await r.drain(ps);
  });
});

describe("the coalescer as the dispatcher uses it: one batch per group until it yields its group's turn", () => {
  it("the group's next batch starts when the running one yields, not before; both count toward maxParallel", async () => {
    const started: number[][] = [];
    const yields: (() => void)[] = [];
    const gates: (() => void)[] = [];
    const c = coalesce<number, number>(
      async (_g, ids, yieldTurn) => {
        started.push(ids);
        yields.push(yieldTurn);
        await new Promise<void>((r) => gates.push(r));
        return ids;
      },
      { maxBatch: Infinity, maxParallel: 2, maxPerGroup: 1 },
    );
    const ps = [c('a', 1), c('a', 2), c('a', 3)];
    expect(started).toEqual([[1]]);
    yields[0]!();
    expect(started).toEqual([[1], [2, 3]]);
    // A third batch of the group waits for a parallel slot even once the second yields too.
    const later = c('a', 4);
    yields[1]!();
    yields[0]!();
    expect(started).toEqual([[1], [2, 3]]);
    gates[0]!();
    await ps[0];
    expect(started).toEqual([[1], [2, 3], [4]]);
    gates.splice(0).forEach((g) => g());
    await new Promise((r) => setImmediate(r));
    gates.splice(0).forEach((g) => g());
    expect(await Promise.all([...ps, later])).toEqual([1, 2, 3, 4]);
  });
});

/** Batch sizes of n items of weight 1 with at most `per` per batch. */
function* chunks(n: number, per: number): Generator<number> {
  for (; n > 0; n -= per) yield Math.min(n, per);
}

describe('the idempotent executor: the batched fast path, then each item it could not answer alone', () => {
  class Edge extends Error {}
  const isEdge = (e: unknown) => e instanceof Edge;

  it('answers from the batch, and runs the items marked ALONE alone, in order', async () => {
    const alone: string[] = [];
    const out = await executeIdempotent(
      ['a', 'b', 'c', 'd'],
      async (items) => items.map((i) => (i === 'b' || i === 'd' ? ALONE : `batch:${i}`)),
      isEdge,
      async (i) => (alone.push(i), `alone:${i}`),
    );
    expect(out).toEqual(['batch:a', 'alone:b', 'batch:c', 'alone:d']);
    expect(alone).toEqual(['b', 'd']);
  });

  it('at the edge of the batch every item runs alone, one after the other in arrival order', async () => {
    const order: string[] = [];
    let running = 0;
    const out = await executeIdempotent(
      ['a', 'b', 'c'],
      async () => {
        throw new Edge();
      },
      isEdge,
      async (i) => {
        expect(++running).toBe(1);
        order.push(i);
        await new Promise((r) => setImmediate(r));
        running--;
        return i.toUpperCase();
      },
    );
    expect(out).toEqual(['A', 'B', 'C']);
    expect(order).toEqual(['a', 'b', 'c']);
  });

  it("any other failure of the batch is every item's, and nothing runs alone", async () => {
    let alone = 0;
    const boom = new Error('database gone');
    await expect(
      executeIdempotent(
        ['a', 'b'],
        async () => {
          throw boom;
        },
        isEdge,
        async () => String(++alone),
      ),
    ).rejects.toBe(boom);
    expect(alone).toBe(0);
  });
});
