// Result stream appends. The per-namespace head row is locked (FOR UPDATE) and bumped inside the
// outcome's transaction and stays locked until commit, so sequences commit in increasing order and
// the committed head value is the watermark: no reader can see sequence n+1 while n is uncommitted.
import type { Conn } from '../db/pool.js';

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
    // The UPDATE allocates k sequences (the row stays locked to the commit) and keeps the new head
    // in the connection's LAST_INSERT_ID, read by the next statement. (Not the OK packet's insert
    // id: an insert by a trigger overwrites that one, LAST_INSERT_ID() is restored after it.) The
    // head row is created on the namespace's first event only.
    const bump = async () => {
      const [res] = await c.query('UPDATE stream_heads SET last_sequence = LAST_INSERT_ID(last_sequence + ?), updated_at = UTC_TIMESTAMP(3) WHERE namespace_id = ?', [
        list.length,
        ns,
      ]);
      if ((res as { affectedRows: number }).affectedRows !== 1) return null;
      const [[row]] = (await c.query('SELECT LAST_INSERT_ID() AS head')) as unknown as [[{ head: string | number }]];
      return BigInt(row.head);
    };
    let head = await bump();
    if (head === null) {
      await c.execute(
        `INSERT INTO stream_heads (namespace_id, last_sequence, updated_at) VALUES (?, 0, UTC_TIMESTAMP(3))
         ON DUPLICATE KEY UPDATE namespace_id = namespace_id`,
        [ns],
      );
      head = await bump();
      if (head === null) throw new Error(`stream head of namespace ${ns} could not be allocated`);
    }
    const last = head;
    const first = last - BigInt(list.length) + 1n;
    const values: unknown[] = [];
    list.forEach((e, i) => {
      const seq = (first + BigInt(i)).toString();
      values.push(ns, seq, e.type, e.taskId, e.queueId, JSON.stringify(e.result));
      out.push({ namespaceId: ns, sequence: seq, taskId: e.taskId });
    });
    await c.query(
      `INSERT INTO result_events (namespace_id, sequence, type, task_id, queue_id, occurred_at, result) VALUES ${list
        .map(() => '(?, ?, ?, ?, ?, UTC_TIMESTAMP(3), ?)')
        .join(', ')}`,
      values,
    );
  }
  return out;
}
