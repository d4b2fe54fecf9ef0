// The step graph of a workflow version. Topological ties are broken by position in the version,
// so the order, and every plan built on it, is deterministic.
import type { WorkflowStep } from '@orbit/protocol/workflow-views';

export interface StepGraph {
  readonly steps: readonly WorkflowStep[];
  readonly index: ReadonlyMap<string, number>;
  readonly parents: readonly (readonly number[])[];
  readonly children: readonly (readonly number[])[];
  readonly order: readonly number[];
}

/** A cycle is given in edge order (each a parent of the next), starting at its smallest position. */
export function topologicalOrder(n: number, parents: readonly (readonly number[])[]): { order: number[]; children: number[][] } | { cycle: number[] } {
  const indegree = parents.map((p) => p.length);
  const children: number[][] = Array.from({ length: n }, () => []);
  parents.forEach((ps, i) => ps.forEach((p) => children[p]!.push(i)));
  // A min-heap is not worth it for a version's few steps.
  const ready: number[] = [];
  for (let i = 0; i < n; i++) if (indegree[i] === 0) ready.push(i);
  const order: number[] = [];
  while (ready.length > 0) {
    let at = 0;
    for (let j = 1; j < ready.length; j++) if (ready[j]! < ready[at]!) at = j;
    const i = ready.splice(at, 1)[0]!;
    order.push(i);
    for (const c of children[i]!) if (--indegree[c]! === 0) ready.push(c);
  }
  if (order.length === n) return { order, children };
  return { cycle: findCycle(n, parents, new Set(order)) };
}

/** Each node not in `done` has a parent not in `done`: n steps along such parents from one of them
 * end on a cycle, which the walk then goes round once. */
function findCycle(n: number, parents: readonly (readonly number[])[], done: ReadonlySet<number>): number[] {
  const parentOf = (v: number) => parents[v]!.find((p) => !done.has(p))!;
  let v = 0;
  while (done.has(v)) v++;
  for (let i = 0; i < n; i++) v = parentOf(v);
  const walk = [v];
  for (let u = parentOf(v); u !== v; u = parentOf(u)) walk.push(u);
  // Rotated so that the same graph always names the same cycle the same way.
  const cycle = walk.reverse();
  const first = cycle.indexOf(Math.min(...cycle));
  return [...cycle.slice(first), ...cycle.slice(0, first)];
}

/** For a stored, hence valid, version: an unknown parent or a cycle means a corrupted row. */
export function buildGraph(steps: readonly WorkflowStep[]): StepGraph {
  const index = new Map(steps.map((s, i) => [s.key, i]));
  const parents = steps.map((s) =>
    s.after.map((k) => {
      const p = index.get(k);
      if (p === undefined) throw new Error(`workflow version: step ${s.key} names unknown parent ${k}`);
      return p;
    }),
  );
  const topo = topologicalOrder(steps.length, parents);
  if ('cycle' in topo) throw new Error(`workflow version: cycle ${topo.cycle.map((i) => steps[i]!.key).join(' -> ')}`);
  return { steps, index, parents, children: topo.children, order: topo.order };
}
