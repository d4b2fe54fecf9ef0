// Result stream appends. The per-namespace head row is locked (FOR UPDATE) and bumped inside the
// outcome's transaction and stays locked until commit, so sequences commit in increasing order and
// the committed head value is the watermark: no reader can see sequence n+1 while n is uncommitted.
// The statements are server/db/result-events.ts.
import type { Tx } from '../db/pool.js';
import { allocateSequences, insertResultEvents, readAllocatedHead } from '../db/result-events.js';

export type EventType = 'task.succeeded' | 'task.failed' | 'task.cancelled' | 'task.deadline_exceeded' | 'task.needs_review';

export interface PendingEvent {
  namespaceId: string;
  type: EventType;
  taskId: string;
  queueId: string;
  result: unknown;
}

export const OUTCOME_EVENT: Record<string, EventType> = {
  succeeded: 'task.succeeded',
  failed: 'task.failed',
  cancelled: 'task.cancelled',
  deadline_exceeded: 'task.deadline_exceeded',
  unknown: 'task.needs_review',
};

/** appendResultEvents(events, { sequences }): allocates sequences per namespace (namespaces in
 * order) and inserts the events with multi-row VALUES. With `sequences: false` (the ledger flush)
 * nothing is read back, so both statements travel with the transaction's
 * next round trip (its COMMIT); otherwise the allocated sequences are returned. */
export async function appendResultEvents(
  c: Tx,
  events: PendingEvent[],
  opts: { sequences?: boolean } = {},
): Promise<{ namespaceId: string; sequence: string; taskId: string }[]> {
  const byNs = new Map<string, PendingEvent[]>();
  for (const e of events) byNs.set(e.namespaceId, [...(byNs.get(e.namespaceId) ?? []), e]);
  const out: { namespaceId: string; sequence: string; taskId: string }[] = [];
  for (const ns of [...byNs.keys()].sort()) {
    const list = byNs.get(ns)!;
    const k = list.length;
    await allocateSequences(c, ns, k);
    if (opts.sequences !== false) {
      const first = (await readAllocatedHead(c, ns)) - BigInt(k) + 1n;
      list.forEach((e, i) => out.push({ namespaceId: ns, sequence: (first + BigInt(i)).toString(), taskId: e.taskId }));
    }
    await insertResultEvents(
      c,
      ns,
      list.map((e, i) => ({ fromHead: k - 1 - i, type: e.type, taskId: e.taskId, queueId: e.queueId, result: JSON.stringify(e.result) })),
    );
  }
  return out;
}
