// Appending to the result stream (server/dispatch/events.ts calls these in the outcome's
// transaction, one namespace at a time, namespaces in order). The namespace's stream_heads row is
// the watermark: allocateSequences bumps it and leaves it locked to the commit, so sequence n+1
// cannot commit before n (docs/design.md, "Result stream watermark").
//
// No value travels between the statements: the events' sequences are read from the head row by the
// INSERT itself (INSERT … SELECT of the row this transaction holds locked: its own bump, or, were
// the bump undone, the committed head). An event can therefore never take a sequence above the
// committed head, whatever happened to the bump — a session variable (what this module used
// before) keeps its value through a rollback, and when the bump was undone but the insert still
// ran (issue 23: Galera multi-writer, head 845, event 846 committed), every later allocation
// collided with that event forever.
import type { RowDataPacket } from 'mysql2/promise';
import type { Tx } from './pool.js';
import { write } from './pipeline.js';
import { chunkRows } from './packet-budget.js';

/** allocateSequences(namespace_id, k): k fresh sequences; the head row is created on the
 * namespace's first event, else bumped by k (its exclusive lock held to the commit). Nothing is
 * read back: insertResultEvents and readAllocatedHead read the head row, so on a pipelined
 * connection the statement costs no round trip of its own. */
export async function allocateSequences(c: Tx, namespaceId: string, k: number): Promise<void> {
  await write(
    c,
    `INSERT INTO stream_heads (namespace_id, last_sequence, updated_at) VALUES (?, ?, UTC_TIMESTAMP(3))
       ON DUPLICATE KEY UPDATE last_sequence = last_sequence + ?, updated_at = UTC_TIMESTAMP(3)`,
    [namespaceId, k, k],
  );
}

/** readAllocatedHead(namespace_id) → the head allocateSequences just set (the last of its k
 * sequences), read from the row this transaction holds locked. */
export async function readAllocatedHead(c: Tx, namespaceId: string): Promise<bigint> {
  const [[row]] = await c.query<RowDataPacket[]>('SELECT last_sequence FROM stream_heads WHERE namespace_id = ? FOR UPDATE', [namespaceId]);
  if (!row) throw new Error(`no stream head for namespace ${namespaceId} after its allocation`);
  return BigInt(row.last_sequence as string);
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
 * result JSON): INSERT … SELECT right after allocateSequences (one unless the results exceed the
 * statement budget: db/packet-budget.ts; every chunk reads the same head), sequence = head −
 * offset with the head read from its row by the same statement, occurred_at = now (taken under the
 * head lock, so it does not decrease along the stream). Every sequence it writes is at most the
 * head: had the bump not happened in this transaction, the statement fails on the duplicate key of
 * an existing event (or, had retention pruned it, writes below the head) instead of committing one
 * above it. */
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
