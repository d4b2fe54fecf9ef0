// SQL operations on the fire history of schedules. The primary key (schedule_id, scheduled_for) is
// the guard of "exactly once per fire time": a second record of one fire time cannot commit.
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn, Pool } from './pool.js';
import { toIso } from './pool.js';
import type { FireOutcome, ScheduleFire } from '../../protocol/http-views.js';

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

export interface NewFire {
  scheduledFor: string;
  outcome: FireOutcome;
  taskId: string | null;
}

/** insertFires(schedule_id, namespace_id, application_id, version, fired_at, fires[]): one
 * multi-row INSERT for the fire times of one transaction; a fire time already recorded fails the
 * whole statement with ER_DUP_ENTRY. */
export async function insertFires(
  c: Conn,
  s: { scheduleId: string; namespaceId: string; applicationId: string; version: number; firedAt: string },
  fires: NewFire[],
): Promise<void> {
  if (fires.length === 0) return;
  const args: unknown[] = [];
  for (const f of fires) args.push(s.scheduleId, f.scheduledFor, s.namespaceId, s.applicationId, s.version, s.firedAt, f.outcome, f.taskId);
  await c.query(
    `INSERT INTO schedule_fires (schedule_id, scheduled_for, namespace_id, application_id, version, fired_at, outcome, task_id)
     VALUES ${fires.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
    args,
  );
}

/** listFires(schedule_id, before?, limit) → newest first, at most limit + 1. */
export async function listFires(db: Pool | Conn, scheduleId: string, before: string | undefined, limit: number): Promise<FireRow[]> {
  const [rows] = await db.query<FireRow[]>(
    `SELECT scheduled_for, fired_at, version, outcome, task_id FROM schedule_fires
      WHERE schedule_id = ?${before === undefined ? '' : ' AND scheduled_for < ?'} ORDER BY scheduled_for DESC LIMIT ${Number(limit) + 1}`,
    before === undefined ? [scheduleId] : [scheduleId, before],
  );
  return rows;
}

/** taskState(task_id) → the state of a task, or null (overlap=skip: is the previous task unfinished?). */
export async function taskState(c: Conn, taskId: string): Promise<string | null> {
  const [rows] = await c.execute<RowDataPacket[]>('SELECT state FROM tasks WHERE id = ?', [taskId]);
  return (rows[0]?.state as string | undefined) ?? null;
}
