// Result stream appends. The per-namespace head row is locked (FOR UPDATE) and bumped inside the
// outcome's transaction and stays locked until commit, so sequences commit in increasing order and
// the committed head value is the watermark: no reader can see sequence n+1 while n is uncommitted.
// The statements are server/db/result-events.ts.
import type { Conn } from '../db/pool.js';
import { allocateSequences, createStreamHead, insertResultEvents } from '../db/result-events.js';

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

/** appendResultEvents(events): allocates sequences per namespace (namespaces in order) and
 * inserts the events with multi-row VALUES. */
export async function appendResultEvents(c: Conn, events: PendingEvent[]): Promise<{ namespaceId: string; sequence: string; taskId: string }[]> {
  const byNs = new Map<string, PendingEvent[]>();
  for (const e of events) byNs.set(e.namespaceId, [...(byNs.get(e.namespaceId) ?? []), e]);
  const out: { namespaceId: string; sequence: string; taskId: string }[] = [];
  for (const ns of [...byNs.keys()].sort()) {
    const list = byNs.get(ns)!;
    // Allocates k sequences (the head row stays locked to the commit). The head row is created on
    // the namespace's first event only.
    let head = await allocateSequences(c, ns, list.length);
    if (head === null) {
      await createStreamHead(c, ns);
      head = await allocateSequences(c, ns, list.length);
      if (head === null) throw new Error(`stream head of namespace ${ns} could not be allocated`);
    }
    const last = head;
    const first = last - BigInt(list.length) + 1n;
    const rows = list.map((e, i) => {
      const seq = (first + BigInt(i)).toString();
      out.push({ namespaceId: ns, sequence: seq, taskId: e.taskId });
      return { sequence: seq, type: e.type, taskId: e.taskId, queueId: e.queueId, result: JSON.stringify(e.result) };
    });
    await insertResultEvents(c, ns, rows);
  }
  return out;
}
