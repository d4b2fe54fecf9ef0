// SQL operations on the fire history of schedules. The primary key (schedule_id, scheduled_for)
// guards "exactly once per fire time".
import type { RowDataPacket } from 'mysql2/promise';
import { toIso, type Conn, type Pool } from './pool.js';
import type { FireOutcome, ScheduleFire } from '@orbit/protocol/http-views';
import type { TaskState } from '@orbit/protocol/states';
import { placeholders, placeholderRows } from './placeholders.js';

export interface FireRow extends RowDataPacket {
  scheduled_for: string;
  fired_at: string;
  version: number;
  outcome: FireOutcome;
  task_id: string | null;
}

export function fireView(r: FireRow): ScheduleFire {
  const v: ScheduleFire = { scheduled_for: toIso(r.scheduled_for)!, fired_at: toIso(r.fired_at)!, version: Number(r.version), outcome: r.outcome };
  if (r.task_id) v.task_id = r.task_id;
  return v;
}

export type NewFire = Pick<FireRow, 'scheduled_for' | 'version' | 'outcome' | 'task_id'> & { schedule_id: string };

/** The fire times of one transaction; one already recorded fails the whole statement with
 * ER_DUP_ENTRY. */
export async function insertFires(
  c: Conn,
  s: { namespaceOf: (scheduleId: string) => string; applicationId: string; firedAt: string },
  fires: NewFire[],
): Promise<void> {
  if (fires.length === 0) return;
  const args: unknown[] = [];
  for (const f of fires) args.push(f.schedule_id, f.scheduled_for, s.namespaceOf(f.schedule_id), s.applicationId, f.version, s.firedAt, f.outcome, f.task_id);
  await c.query(
    `INSERT INTO schedule_fires (schedule_id, scheduled_for, namespace_id, application_id, version, fired_at, outcome, task_id)
     VALUES ${placeholderRows(fires.length, '(?, ?, ?, ?, ?, ?, ?, ?)')}`,
    args,
  );
}

export async function listFires(db: Pool | Conn, scheduleId: string, before: string | undefined, limit: number): Promise<FireRow[]> {
  const [rows] = await db.query<FireRow[]>(
    `SELECT scheduled_for, fired_at, version, outcome, task_id FROM schedule_fires
      WHERE schedule_id = ?${before === undefined ? '' : ' AND scheduled_for < ?'} ORDER BY scheduled_for DESC LIMIT ${Number(limit) + 1}`,
    before === undefined ? [scheduleId] : [scheduleId, before],
  );
  return rows;
}

/** State by task id, for overlap=skip. */
export async function taskStates(c: Conn, taskIds: string[]): Promise<Map<string, TaskState>> {
  if (taskIds.length === 0) return new Map();
  const [rows] = await c.query<RowDataPacket[]>(`SELECT id, state FROM tasks WHERE id IN (${placeholders(taskIds.length)})`, taskIds);
  return new Map(rows.map((r) => [r.id as string, r.state as TaskState]));
}
