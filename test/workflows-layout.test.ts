// The layering the console draws a workflow with (protocol/workflow-layout.ts): every edge goes to
// a deeper layer, depth is the longest path from a root, and what an editor may hold while the user
// types (unknown parents, cycles, duplicate keys) is reported, never thrown.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { layers } from '../protocol/workflow-layout.js';

describe('layers()', () => {
  it('puts roots first and each step one layer below its deepest parent, each layer in version order', () => {
    const l = layers([
      { key: 'fetch' },
      { key: 'split', after: ['fetch'] },
      { key: 'index', after: ['split'] },
      { key: 'approve', after: ['split'] },
      { key: 'publish', after: ['index', 'approve', 'fetch'] },
      { key: 'undo', after: ['publish'] },
      { key: 'audit' },
    ]);
    expect(l.layers).toEqual([['fetch', 'audit'], ['split'], ['index', 'approve'], ['publish'], ['undo']]);
    expect(l.unplaced).toEqual([]);
  });

  it('reports a cycle, what hangs below it and an unknown parent as unplaced', () => {
    const l = layers([
      { key: 'a' },
      { key: 'b', after: ['a', 'd'] },
      { key: 'c', after: ['b'] },
      { key: 'd', after: ['c'] },
      { key: 'e', after: ['d'] },
      { key: 'f', after: ['nowhere'] },
      { key: 'g', after: ['f'] },
      { key: 'a', after: ['g'] },
    ]);
    expect(l.layers).toEqual([['a']]);
    expect(l.unplaced).toEqual(['b', 'c', 'd', 'e', 'f', 'g']);
  });

  it('on random DAGs: every step placed, every edge goes down, depth is the longest path', () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.nat(), { maxLength: 4 }), { minLength: 1, maxLength: 50 }), (raw) => {
        // Step i's parents are earlier steps (a DAG), shuffled into a reversed version order.
        const steps = raw.map((ps, i) => ({ key: `s${i}`, after: i === 0 ? [] : [...new Set(ps.map((p) => `s${p % i}`))] })).reverse();
        const l = layers(steps);
        expect(l.unplaced).toEqual([]);
        expect(l.layers.flat().sort()).toEqual(steps.map((s) => s.key).sort());
        const longest = new Map<string, number>();
        const depthOf = (k: string): number => {
          if (!longest.has(k)) longest.set(k, Math.max(0, ...steps.find((s) => s.key === k)!.after.map((p) => depthOf(p) + 1)));
          return longest.get(k)!;
        };
        for (const s of steps) {
          expect(l.depth.get(s.key)).toBe(depthOf(s.key));
          for (const p of s.after) expect(l.depth.get(p)!).toBeLessThan(l.depth.get(s.key)!);
        }
      }),
      { numRuns: 200 },
    );
  });
});
