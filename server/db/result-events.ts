// Appending to the result stream (docs/design.md, "HTTP commands and the result stream"): the bumped head row
// stays locked to the commit, so sequence n+1 cannot commit before n. The INSERT reads sequences
// from the head row, never a session variable, which would survive a rollback.
import type { Tx } from './pool.js';
import { write } from './pipeline.js';
import { chunkRows } from './packet-budget.js';

/** Reserves k sequences; nothing is read back, so it costs no round trip of its own. */
export async function allocateSequences(c: Tx, namespaceId: string, k: number): Promise<void> {
  await write(
    c,
    `INSERT INTO stream_heads (namespace_id, last_sequence, updated_at) VALUES (?, ?, UTC_TIMESTAMP(3))
       ON DUPLICATE KEY UPDATE last_sequence = last_sequence + ?, updated_at = UTC_TIMESTAMP(3)`,
    [namespaceId, k, k],
  );
}

export interface NewResultEvent {
  /** Position from the end of the allocation: the last event is 0. */
  fromHead: number;
  type: string;
  taskId: string;
  queueId: string;
  result: string;
}

/** sequence = head − fromHead, read by the same statement, so nothing commits above the head. */
export async function insertResultEvents(c: Tx, namespaceId: string, rows: NewResultEvent[]): Promise<void> {
  const valuesOf = (e: NewResultEvent) => [e.fromHead, e.type, e.taskId, e.queueId, e.result];
  for (const chunk of chunkRows(c, rows, (e) => [namespaceId, ...valuesOf(e)])) {
    await write(
      c,
      `INSERT INTO result_events (namespace_id, sequence, type, task_id, queue_id, occurred_at, result)
         SELECT h.namespace_id, h.last_sequence - e.from_head, e.type, e.task_id, e.queue_id, UTC_TIMESTAMP(3), e.result
           FROM stream_heads h
           JOIN (${chunk.map((_, i) => (i === 0 ? 'SELECT ? AS from_head, ? AS type, ? AS task_id, ? AS queue_id, ? AS result' : 'SELECT ?, ?, ?, ?, ?')).join(' UNION ALL ')}) e
          WHERE h.namespace_id = ?`,
      [...chunk.flatMap(valuesOf), namespaceId],
    );
  }
}
