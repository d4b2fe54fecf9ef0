// Pause and resume of the resources that are paused by revision: queues and subscriptions have the
// same columns for it (paused, revision, updated_at, retired_at) and the same rule — the caller's
// expected_revision must still be current and the resource not retired — so one statement serves
// both. Schedules are not among them: pausing one also clears or recomputes next_fire_at and drops
// a catch-up in progress (db/schedules.ts setSchedulePaused), and their revision check happens
// under the row lock in schedules/commands.ts.
import type { Conn } from './pool.js';

export type PausableTable = 'queues' | 'subscriptions';

/** setPausedAtRevision(table, id, paused, expected_revision) → true when the revision matched (and
 * was bumped); false when it did not or the row is retired (nothing changed). */
export async function setPausedAtRevision(c: Conn, table: PausableTable, id: string, paused: boolean, expectedRevision: string): Promise<boolean> {
  const [res] = await c.execute(
    `UPDATE ${table} SET paused = ?, revision = revision + 1, updated_at = UTC_TIMESTAMP(3)
      WHERE id = ? AND revision = ? AND retired_at IS NULL`,
    [paused ? 1 : 0, id, expectedRevision],
  );
  return (res as { affectedRows: number }).affectedRows === 1;
}
