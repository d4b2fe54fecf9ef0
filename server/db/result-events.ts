// Appending to the result stream (server/dispatch/events.ts calls these in the outcome's
// transaction, one namespace at a time, namespaces in order). The namespace's stream_heads row is
// the watermark: allocateSequences bumps it and leaves it locked to the commit, so sequence n+1
// cannot commit before n (docs/design.md, "Result stream watermark").
import type { Conn } from './pool.js';

/** allocateSequences(namespace_id, k) → the new head (the last of k fresh sequences), or null when
 * the namespace has no head row yet (createStreamHead, then again). The UPDATE keeps the new head
 * in the connection's LAST_INSERT_ID, read by the next statement. (Not the OK packet's insert id:
 * an insert by a trigger overwrites that one, LAST_INSERT_ID() is restored after it.) */
export async function allocateSequences(c: Conn, namespaceId: string, k: number): Promise<bigint | null> {
  const [res] = await c.query('UPDATE stream_heads SET last_sequence = LAST_INSERT_ID(last_sequence + ?), updated_at = UTC_TIMESTAMP(3) WHERE namespace_id = ?', [
    k,
    namespaceId,
  ]);
  if ((res as { affectedRows: number }).affectedRows !== 1) return null;
  const [[row]] = (await c.query('SELECT LAST_INSERT_ID() AS head')) as unknown as [[{ head: string | number }]];
  return BigInt(row.head);
}

/** createStreamHead(namespace_id): the head row at 0, on the namespace's first event (a concurrent
 * creator's row is kept). */
export async function createStreamHead(c: Conn, namespaceId: string): Promise<void> {
  await c.execute(
    `INSERT INTO stream_heads (namespace_id, last_sequence, updated_at) VALUES (?, 0, UTC_TIMESTAMP(3))
         ON DUPLICATE KEY UPDATE namespace_id = namespace_id`,
    [namespaceId],
  );
}

export interface NewResultEvent {
  sequence: string;
  type: string;
  taskId: string;
  queueId: string;
  /** The result document, JSON text. */
  result: string;
}

/** insertResultEvents(namespace_id, rows: sequence, type, task, queue, result JSON): one
 * multi-row INSERT, occurred_at = now (taken under the head lock, so it does not decrease along
 * the stream). */
export async function insertResultEvents(c: Conn, namespaceId: string, rows: NewResultEvent[]): Promise<void> {
  if (rows.length === 0) return;
  const values: unknown[] = [];
  for (const e of rows) values.push(namespaceId, e.sequence, e.type, e.taskId, e.queueId, e.result);
  await c.query(
    `INSERT INTO result_events (namespace_id, sequence, type, task_id, queue_id, occurred_at, result) VALUES ${rows
      .map(() => '(?, ?, ?, ?, ?, UTC_TIMESTAMP(3), ?)')
      .join(', ')}`,
    values,
  );
}
