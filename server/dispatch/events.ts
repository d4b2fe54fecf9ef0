// Result stream appends. The per-namespace head row is locked (FOR UPDATE) and bumped inside the
// outcome's transaction and stays locked until commit, so sequences commit in increasing order and
// the committed head value is the watermark: no reader can see sequence n+1 while n is uncommitted.
import type { Conn } from '../db/pool.js';
import { write } from '../db/pipeline.js';

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
 * nothing is read back, so on a pipelined connection both statements travel with the transaction's
 * next round trip (its COMMIT); otherwise the allocated sequences are returned. */
export async function appendResultEvents(
  c: Conn,
  events: PendingEvent[],
  opts: { sequences?: boolean } = {},
): Promise<{ namespaceId: string; sequence: string; taskId: string }[]> {
  const byNs = new Map<string, PendingEvent[]>();
  for (const e of events) byNs.set(e.namespaceId, [...(byNs.get(e.namespaceId) ?? []), e]);
  const out: { namespaceId: string; sequence: string; taskId: string }[] = [];
  for (const ns of [...byNs.keys()].sort()) {
    const list = byNs.get(ns)!;
    const k = list.length;
    // Allocates k sequences: the head row is created on the namespace's first event, else bumped by
    // k (its exclusive lock held to the commit). The new head goes to a session variable that the
    // event INSERT reads — not LAST_INSERT_ID(), which an audit trigger's own insert may change,
    // and not a read-back, which would cost the transaction a round trip.
    await write(
      c,
      `INSERT INTO stream_heads (namespace_id, last_sequence, updated_at) VALUES (?, (@orbit_stream_head := ?), UTC_TIMESTAMP(3))
         ON DUPLICATE KEY UPDATE last_sequence = (@orbit_stream_head := last_sequence + ?), updated_at = UTC_TIMESTAMP(3)`,
      [ns, k, k],
    );
    let first: bigint | null = null;
    if (opts.sequences !== false) {
      const [[row]] = (await c.query('SELECT @orbit_stream_head AS head')) as unknown as [[{ head: string | number }]];
      first = BigInt(row.head) - BigInt(k) + 1n;
    }
    const values: unknown[] = [];
    list.forEach((e, i) => {
      values.push(ns, k - 1 - i, e.type, e.taskId, e.queueId, JSON.stringify(e.result));
      if (first !== null) out.push({ namespaceId: ns, sequence: (first + BigInt(i)).toString(), taskId: e.taskId });
    });
    await write(
      c,
      `INSERT INTO result_events (namespace_id, sequence, type, task_id, queue_id, occurred_at, result) VALUES ${list
        .map(() => '(?, @orbit_stream_head - ?, ?, ?, ?, UTC_TIMESTAMP(3), ?)')
        .join(', ')}`,
      values,
    );
  }
  return out;
}
