// The step graph of a workflow version: parents and children by step position, and one topological
// order (Kahn's algorithm, ties broken by position in the version, so the order — and every plan
// built on it — is deterministic). Pure; shared by the version validation (which reports a cycle)
// and the advancement decisions (which walk the order once per event).
import type { WorkflowStep } from '@orbit/protocol/workflow-views';

export interface StepGraph {
  readonly steps: readonly WorkflowStep[];
  /** Position of each key in `steps`. */
  readonly index: ReadonlyMap<string, number>;
  readonly parents: readonly (readonly number[])[];
  readonly children: readonly (readonly number[])[];
  /** Every position, each after all its parents. */
  readonly order: readonly number[];
}

/** A topological order of `n` nodes given each node's parents, or one cycle (positions, in edge
 * order: each is a parent of the next, the last a parent of the first; starting at its smallest). */
export function topologicalOrder(n: number, parents: readonly (readonly number[])[]): { order: number[] } | { cycle: number[] } {
  const indegree = parents.map((p) => p.length);
  const children: number[][] = Array.from({ length: n }, () => []);
  parents.forEach((ps, i) => ps.forEach((p) => children[p]!.push(i)));
  // A min-heap is not worth it for ≤ 50 steps: the ready list is scanned for its smallest position.
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
  if (order.length === n) return { order };
  return { cycle: findCycle(n, parents, new Set(order)) };
}

/** A cycle among the nodes not in `done` (each of them has a parent not in `done`): walk parents
 * until a node repeats. */
function findCycle(n: number, parents: readonly (readonly number[])[], done: ReadonlySet<number>): number[] {
  let start = 0;
  while (start < n && done.has(start)) start++;
  const seenAt = new Map<number, number>();
  const path: number[] = [];
  let v = start;
  while (!seenAt.has(v)) {
    seenAt.set(v, path.length);
    path.push(v);
    v = parents[v]!.find((p) => !done.has(p))!;
  }
  // path[k..] walks child → parent; reversed it walks parent → child. Rotated to start at its
  // first step in version order, so the same graph always names the same cycle the same way.
  const cycle = path.slice(seenAt.get(v)).reverse();
  const first = cycle.indexOf(Math.min(...cycle));
  return [...cycle.slice(first), ...cycle.slice(0, first)];
}

/** The graph of a stored (hence valid) version. Throws on an unknown parent or a cycle, which only
 * a corrupted row could hold. */
export function buildGraph(steps: readonly WorkflowStep[]): StepGraph {
  const index = new Map(steps.map((s, i) => [s.key, i]));
  const parents = steps.map((s) =>
    s.after.map((k) => {
      const p = index.get(k);
      if (p === undefined) throw new Error(`workflow version: step ${s.key} names unknown parent ${k}`);
      return p;
    }),
  );
  const children: number[][] = steps.map(() => []);
  parents.forEach((ps, i) => ps.forEach((p) => children[p]!.push(i)));
  const topo = topologicalOrder(steps.length, parents);
  if ('cycle' in topo) throw new Error(`workflow version: cycle ${topo.cycle.map((i) => steps[i]!.key).join(' -> ')}`);
  return { steps, index, parents, children, order: topo.order };
}
