// The fair admission of the sessions' own transactions (`admission`, server/dispatch/coalesce.ts:
// the coalescer with batches of one), alone:
// the total and per-application caps hold, freed slots go to the applications in turn, so a
// flooding application never delays another by more than one turn, and a failed transaction frees
// its slot like a committed one. (Its use by real sessions is covered by test/worker-flood.test.ts.)
import { describe, expect, it } from 'vitest';
import { admission } from '../server/dispatch/coalesce.js';

/** A transaction that ends when the test says so. */
function gate() {
  let open!: () => void;
  let fail!: (e: Error) => void;
  const p = new Promise<void>((resolve, reject) => ((open = resolve), (fail = reject)));
  return { p, open, fail };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('admission', () => {
  it('holds the total and per-application caps, and counts what waits', async () => {
    const waits: number[] = [];
    const adm = admission(3, 2, (n) => waits.push(n));
    const started: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const run = (app: string, id: string) =>
      adm(app, () => {
        started.push(id);
        const g = gate();
        gates.set(id, g);
        return g.p;
      });
    const all = [run('a', 'a1'), run('a', 'a2'), run('a', 'a3'), run('b', 'b1'), run('b', 'b2')];
    for (const p of all) p.catch(() => {}); // inspected at the end (allSettled)
    await tick();
    // a1, a2 (a's share is 2), then b1 (the third slot); a3 and b2 wait.
    expect(started).toEqual(['a1', 'a2', 'b1']);
    expect(waits.at(-1)).toBe(2);
    gates.get('a1')!.open();
    await tick();
    // The freed slot goes to the first application in turn that is under its share: a (a3).
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3']);
    gates.get('a2')!.fail(new Error('deadlock'));
    await tick();
    // A failed transaction frees its slot too; b2 is the one left waiting.
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3', 'b2']);
    expect(waits.at(-1)).toBe(0);
    for (const id of ['b1', 'a3', 'b2']) gates.get(id)!.open();
    const settled = await Promise.allSettled(all);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(waits.at(-1)).toBe(0);
  });

  it('round-robin: one application with 100 queued transactions delays another by one turn, not 100', async () => {
    const adm = admission(1, 1);
    const order: string[] = [];
    // Each transaction ends when the test opens its gate.
    const gates: (() => void)[] = [];
    const step = (id: string) => () => {
      order.push(id);
      return new Promise<void>((r) => gates.push(r));
    };
    const flood = Array.from({ length: 100 }, (_, i) => adm('flood', step(`f${i}`)));
    await tick();
    const other = [adm('other', step('o1')), adm('third', step('t1'))];
    const all = Promise.all([...flood, ...other]);
    while (order.length < 102 || gates.length > 0) {
      gates.shift()?.();
      await tick();
    }
    await all;
    // f0 was running, then each waiting application in turn: f1 (waiting before the others), o1, t1.
    expect(order.slice(0, 5)).toEqual(['f0', 'f1', 'o1', 't1', 'f2']);
    expect(order).toHaveLength(102);
  });

  it("a synchronous throw is that transaction's rejection and frees its slot", async () => {
    const adm = admission(1, 1);
    const bad = adm('a', () => {
      throw new Error('boom');
    });
    const good = adm('a', async () => 'ok');
    await expect(bad).rejects.toThrow('boom');
    await expect(good).resolves.toBe('ok');
  });
});
