// SQL operations on schedule versions: published once, never changed.
import type { RowDataPacket } from 'mysql2/promise';
import { toIso, type Conn, type Pool } from './pool.js';
import { placeholders } from './placeholders.js';
import type { ScheduleCalendar, ScheduleTaskTemplate, ScheduleVersion } from '@orbit/protocol/http-views';

export interface VersionRow extends RowDataPacket {
  schedule_id: string;
  number: number;
  namespace_id: string;
  application_id: string;
  calendar: string;
  task: string;
  queue_id: string;
  overlap: 'allow' | 'skip';
  catchup: 'none' | 'latest' | 'all';
  catchup_limit: number;
  starts_at: string | null;
  ends_at: string | null;
  anchor_at: string;
  created_at: string;
}

/** The columns written as they are; calendar and task are JSON, queue_id is the task's. */
// prettier-ignore
const PLAIN = [
  'schedule_id', 'number', 'namespace_id', 'application_id', 'overlap', 'catchup', 'catchup_limit', 'starts_at', 'ends_at', 'anchor_at', 'created_at',
] as const satisfies readonly (keyof VersionRow)[];
const COLUMNS = `${PLAIN.join(', ')}, calendar, task, queue_id`;

export function versionView(r: VersionRow): ScheduleVersion {
  return {
    number: Number(r.number),
    created_at: toIso(r.created_at)!,
    calendar: JSON.parse(r.calendar) as ScheduleCalendar,
    task: JSON.parse(r.task) as ScheduleTaskTemplate,
    overlap: r.overlap,
    catchup: r.catchup,
    catchup_limit: Number(r.catchup_limit),
    starts_at: toIso(r.starts_at),
    ends_at: toIso(r.ends_at),
  };
}

export type NewVersion = Pick<VersionRow, (typeof PLAIN)[number]> & { calendar: ScheduleCalendar; task: ScheduleTaskTemplate; created_by: string };

export async function insertVersion(c: Conn, v: NewVersion): Promise<void> {
  await c.execute(`INSERT INTO schedule_versions (${COLUMNS}, created_by) VALUES (${placeholders(PLAIN.length + 4)})`, [
    ...PLAIN.map((n) => v[n]),
    JSON.stringify(v.calendar),
    JSON.stringify(v.task),
    v.task.queue_id,
    v.created_by,
  ]);
}

export async function getVersion(db: Pool | Conn, scheduleId: string, number: number): Promise<VersionRow | null> {
  const [rows] = await db.execute<VersionRow[]>(`SELECT ${COLUMNS} FROM schedule_versions WHERE schedule_id = ? AND number = ?`, [scheduleId, number]);
  return rows[0] ?? null;
}

export async function listVersions(db: Pool | Conn, scheduleId: string): Promise<VersionRow[]> {
  const [rows] = await db.execute<VersionRow[]>(`SELECT ${COLUMNS} FROM schedule_versions WHERE schedule_id = ? ORDER BY number`, [scheduleId]);
  return rows;
}
