// Layers of a workflow version's step graph for drawing it: each step's depth is 0 for a root, else
// one more than its deepest parent, so every edge points to a later layer. Pure and tolerant of what
// an editor holds while the user types (unknown parents, cycles, duplicates): it answers what it can
// place and names what it cannot, instead of throwing. The console draws runs and version previews
// with it; the server's own order (server/workflows/graph.ts) is a topological order, not a layering.

export interface LayoutStep {
  key: string;
  after?: readonly string[];
}

export interface Layers {
  /** Keys per depth, each layer in version order. */
  layers: string[][];
  /** Depth of each placed key. */
  depth: Map<string, number>;
  /** Keys that could not be placed: on a cycle, or below one, or naming an unknown parent. */
  unplaced: string[];
}

/** Longest-path layering (Kahn's order over the parents that exist). Duplicate keys: the first wins. */
export function layers(steps: readonly LayoutStep[]): Layers {
  const byKey = new Map<string, LayoutStep>();
  for (const s of steps) if (!byKey.has(s.key)) byKey.set(s.key, s);
  const depth = new Map<string, number>();
  const blocked = new Set<string>();
  // Each pass places every step whose parents are all placed; a step with an unknown parent is
  // blocked, and so is anything below it. At most one pass per layer (≤ steps).
  let progress = true;
  while (progress) {
    progress = false;
    for (const s of byKey.values()) {
      if (depth.has(s.key) || blocked.has(s.key)) continue;
      const parents = s.after ?? [];
      if (parents.some((p) => !byKey.has(p) || blocked.has(p))) {
        blocked.add(s.key);
        progress = true;
        continue;
      }
      if (!parents.every((p) => depth.has(p))) continue;
      depth.set(
        s.key,
        parents.reduce((d, p) => Math.max(d, depth.get(p)! + 1), 0),
      );
      progress = true;
    }
  }
  const out: string[][] = [];
  const unplaced: string[] = [];
  for (const s of byKey.values()) {
    const d = depth.get(s.key);
    if (d === undefined) unplaced.push(s.key);
    else (out[d] ??= []).push(s.key);
  }
  return { layers: out, depth, unplaced };
}
