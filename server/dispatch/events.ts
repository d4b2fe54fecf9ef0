// Result stream appends: the bumped head row stays locked until commit, so sequences commit in
// order and the committed head is the watermark.
import type { Tx } from '../db/pool.js';
import { allocateSequences, insertResultEvents } from '../db/result-events.js';

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

/** Queued: the statements travel with the transaction's next round trip, usually its COMMIT. */
export async function appendResultEvents(c: Tx, events: PendingEvent[]): Promise<void> {
  const byNs = new Map<string, PendingEvent[]>();
  for (const e of events) byNs.set(e.namespaceId, [...(byNs.get(e.namespaceId) ?? []), e]);
  for (const ns of [...byNs.keys()].sort()) {
    const list = byNs.get(ns)!;
    const k = list.length;
    await allocateSequences(c, ns, k);
    const rows = list.map((e, i) => ({ fromHead: k - 1 - i, type: e.type, taskId: e.taskId, queueId: e.queueId, result: JSON.stringify(e.result) }));
    await insertResultEvents(c, ns, rows);
  }
}
