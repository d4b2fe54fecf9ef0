// Helpers of the schedule tests: request bodies, raw calls, and SQL to look at (or backdate) what
// the firing loop does, instead of sleeping across fire times.
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../../server/db/pool.js';
import { call, ikey, type RawResponse } from './http.js';
import type { Schedule } from '@orbit/protocol/http-views';

export function versionBody(queueId: string, over: Record<string, unknown> = {}, task: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    calendar: { every_seconds: 3600 },
    task: { queue_id: queueId, handler: 'report.build', handler_version: 'v1', payload_version: 'v1', payload: { scope: 'all' }, ...task },
    ...over,
  };
}

export interface Api {
  url: string;
  token: string;
}

let n = 0;
export const scheduleName = (p = 's') => `${p}-${process.pid}-${++n}`;

export const createSchedule = (a: Api, body: unknown, key = ikey('sc')): Promise<RawResponse> =>
  call(a.url, 'POST', '/v1/schedules', { token: a.token, key, body });

export const scheduleCommand = (a: Api, id: string, action: string, body: unknown, key = ikey('sc')): Promise<RawResponse> =>
  call(a.url, 'POST', action === 'versions' ? `/v1/schedules/${id}/versions` : `/v1/schedules/${id}:${action}`, { token: a.token, key, body });

export async function getSchedule(a: Api, id: string): Promise<Schedule> {
  const r = await call(a.url, 'GET', `/v1/schedules/${id}`, { token: a.token });
  if (r.status !== 200) throw new Error(r.text);
  return r.body.data.schedule;
}

/** Creates a schedule and returns {schedule, version}; throws on anything but 201. */
export async function newSchedule(
  a: Api,
  queueId: string,
  over: Record<string, unknown> = {},
  task: Record<string, unknown> = {},
  paused = false,
): Promise<{ schedule: any; version: any }> {
  const r = await createSchedule(a, { name: scheduleName(), paused, version: versionBody(queueId, over, task) });
  if (r.status !== 201) throw new Error(r.text);
  return r.body.data;
}

export interface FireRecord {
  scheduled_for: number;
  outcome: string;
  task_id: string | null;
  fired_at: number;
}

const ms = (v: string) => Date.parse(v.replace(' ', 'T') + 'Z');

/** Every fire record of a schedule, oldest first (times as epoch ms). */
export async function fireRecords(pool: Pool, scheduleId: string): Promise<FireRecord[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    'SELECT scheduled_for, outcome, task_id, fired_at FROM schedule_fires WHERE schedule_id = ? ORDER BY scheduled_for',
    [scheduleId],
  );
  return rows.map((r) => ({ scheduled_for: ms(r.scheduled_for), outcome: r.outcome, task_id: r.task_id, fired_at: ms(r.fired_at) }));
}

/** Tasks of a schedule: id, scheduled_for (ms), state, created_at (ms). */
export async function scheduleTasks(pool: Pool, scheduleId: string): Promise<{ id: string; scheduled_for: number; state: string; created_at: number }[]> {
  const [rows] = await pool.query<RowDataPacket[]>('SELECT id, scheduled_for, state, created_at FROM tasks WHERE schedule_id = ? ORDER BY scheduled_for', [
    scheduleId,
  ]);
  return rows.map((r) => ({ id: r.id, scheduled_for: ms(r.scheduled_for), state: r.state, created_at: ms(r.created_at) }));
}

/** Database clock (ms). */
export async function dbNow(pool: Pool): Promise<number> {
  const [[r]] = (await pool.query('SELECT UTC_TIMESTAMP(3) AS now')) as unknown as [[{ now: string }]];
  return ms(r.now);
}

const db = (t: number) => new Date(t).toISOString().replace('T', ' ').replace('Z', '');

/**
 * Moves an every_seconds schedule back in time as if `missed` fire times had passed while no
 * gateway ran: the version's anchor goes back and next_fire_at is its first fire time. The fire
 * times are then anchor + k·period, k = 1..missed in the past, the next one `ahead` ms after now.
 */
export async function backdate(pool: Pool, scheduleId: string, periodMs: number, missed: number, ahead = periodMs / 2): Promise<number[]> {
  const now = await dbNow(pool);
  const anchor = now + ahead - (missed + 1) * periodMs;
  await pool.query('UPDATE schedule_versions SET anchor_at = ? WHERE schedule_id = ?', [db(anchor), scheduleId]);
  await pool.query('UPDATE schedules SET next_fire_at = ? WHERE id = ?', [db(anchor + periodMs), scheduleId]);
  return Array.from({ length: missed }, (_, i) => anchor + (i + 1) * periodMs);
}
