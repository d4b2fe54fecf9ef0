// Pause and resume by revision for queues and subscriptions, which share the columns and the rule:
// the expected revision must still be current and the resource not retired. Schedules differ:
// pausing one also changes next_fire_at and drops a catch-up.
import type { Conn } from './pool.js';

export type PausableTable = 'queues' | 'subscriptions';

/** False when the revision did not match or the row is retired; nothing changed then. */
export async function setPausedAtRevision(c: Conn, table: PausableTable, id: string, paused: boolean, expectedRevision: string): Promise<boolean> {
  const [res] = await c.execute(
    `UPDATE ${table} SET paused = ?, revision = revision + 1, updated_at = UTC_TIMESTAMP(3)
      WHERE id = ? AND revision = ? AND retired_at IS NULL`,
    [paused ? 1 : 0, id, expectedRevision],
  );
  return (res as { affectedRows: number }).affectedRows === 1;
}
