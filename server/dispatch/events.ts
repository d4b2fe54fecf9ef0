// Result stream appends. The per-namespace head row is locked (FOR UPDATE) and bumped inside the
// outcome's transaction and stays locked until commit, so sequences commit in increasing order and
// the committed head value is the watermark: no reader can see sequence n+1 while n is uncommitted.
import type { RowDataPacket } from 'mysql2/promise';
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
    await c.execute(
      `INSERT INTO stream_heads (namespace_id, last_sequence, updated_at) VALUES (?, 0, UTC_TIMESTAMP(3))
       ON DUPLICATE KEY UPDATE namespace_id = namespace_id`,
      [ns],
    );
    const [rows] = await c.execute<RowDataPacket[]>('SELECT last_sequence FROM stream_heads WHERE namespace_id = ? FOR UPDATE', [ns]);
    const first = BigInt(rows[0]!.last_sequence as string) + 1n;
    const last = first + BigInt(list.length) - 1n;
    await c.execute('UPDATE stream_heads SET last_sequence = ?, updated_at = UTC_TIMESTAMP(3) WHERE namespace_id = ?', [last.toString(), ns]);
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
