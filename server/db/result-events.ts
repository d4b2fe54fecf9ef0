// Appending to the result stream (server/dispatch/events.ts calls these in the outcome's
// transaction, one namespace at a time, namespaces in order). The namespace's stream_heads row is
// the watermark: allocateSequences bumps it and leaves it locked to the commit, so sequence n+1
// cannot commit before n (docs/design.md, "Result stream watermark").
import type { Conn } from './pool.js';
import { write } from './pipeline.js';
import { chunkRows } from './packet-budget.js';

/** allocateSequences(namespace_id, k): k fresh sequences; the head row is created on the
 * namespace's first event, else bumped by k (its exclusive lock held to the commit). The new head
 * goes to the session variable @orbit_stream_head, read by insertResultEvents and readAllocatedHead
 * — not LAST_INSERT_ID(), which an audit trigger's own insert may change, and not a read-back, so
 * on a pipelined connection the statement costs no round trip of its own. */
export async function allocateSequences(c: Conn, namespaceId: string, k: number): Promise<void> {
  await write(
    c,
    `INSERT INTO stream_heads (namespace_id, last_sequence, updated_at) VALUES (?, (@orbit_stream_head := ?), UTC_TIMESTAMP(3))
       ON DUPLICATE KEY UPDATE last_sequence = (@orbit_stream_head := last_sequence + ?), updated_at = UTC_TIMESTAMP(3)`,
    [namespaceId, k, k],
  );
}

/** readAllocatedHead() → the head allocateSequences just set (the last of its k sequences). */
export async function readAllocatedHead(c: Conn): Promise<bigint> {
  const [[row]] = (await c.query('SELECT @orbit_stream_head AS head')) as unknown as [[{ head: string | number }]];
  return BigInt(row.head);
}

export interface NewResultEvent {
  /** Position from the end of the allocation: the last event is 0, the one before it 1, … */
  fromHead: number;
  type: string;
  taskId: string;
  queueId: string;
  /** The result document, JSON text. */
  result: string;
}

/** insertResultEvents(namespace_id, rows: offset from the allocated head, type, task, queue,
 * result JSON): multi-row INSERTs right after allocateSequences (one unless the results exceed
 * the statement budget: db/packet-budget.ts; every chunk reads the same head), sequence = head −
 * offset, occurred_at = now (taken under the head lock, so it does not decrease along the stream). */
export async function insertResultEvents(c: Conn, namespaceId: string, rows: NewResultEvent[]): Promise<void> {
  const valuesOf = (e: NewResultEvent) => [namespaceId, e.fromHead, e.type, e.taskId, e.queueId, e.result];
  for (const chunk of chunkRows(c, rows, valuesOf)) {
    await write(
      c,
      `INSERT INTO result_events (namespace_id, sequence, type, task_id, queue_id, occurred_at, result) VALUES ${chunk
        .map(() => '(?, @orbit_stream_head - ?, ?, ?, ?, UTC_TIMESTAMP(3), ?)')
        .join(', ')}`,
      chunk.flatMap(valuesOf),
    );
  }
}
