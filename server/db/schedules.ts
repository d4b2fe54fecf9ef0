// SQL operations on schedules. The database clock decides every "now".
import type { RowDataPacket } from 'mysql2/promise';
import { toIso, type Conn, type Pool, type Tx } from './pool.js';
import type { Schedule } from '@orbit/protocol/http-views';
import { byIdRead, caseWhen, Conditions, placeholders } from './placeholders.js';

export interface ScheduleRow extends RowDataPacket {
  id: string;
  namespace_id: string;
  application_id: string;
  name: string;
  revision: string;
  paused: number;
  current_version: number;
  queue_id: string;
  next_fire_at: string | null;
  last_fire_at: string | null;
  last_task_id: string | null;
  catchup_remaining: number | null;
  created_at: string;
  updated_at: string;
  retired_at: string | null;
}

const COLUMNS = `id, namespace_id, application_id, name, revision, paused, current_version, queue_id, next_fire_at, last_fire_at,
  last_task_id, catchup_remaining, created_at, updated_at, retired_at`;

export function scheduleView(r: ScheduleRow): Schedule {
  const v: Schedule = {
    id: r.id,
    namespace_id: r.namespace_id,
    name: r.name,
    revision: String(r.revision),
    paused: Number(r.paused) === 1,
    current_version: Number(r.current_version),
    next_fire_at: toIso(r.next_fire_at),
    last_fire_at: toIso(r.last_fire_at),
    created_at: toIso(r.created_at)!,
    updated_at: toIso(r.updated_at)!,
  };
  if (r.retired_at) v.retired_at = toIso(r.retired_at)!;
  return v;
}

export const getSchedule = byIdRead<ScheduleRow>('schedules', COLUMNS);

export async function listSchedules(
  db: Pool | Conn,
  namespaceId: string,
  queueIds: '*' | string[],
  afterName: string | undefined,
  limit: number,
): Promise<ScheduleRow[]> {
  const where = new Conditions('namespace_id = ?', namespaceId);
  if (queueIds !== '*') {
    if (queueIds.length === 0) return [];
    where.and(`queue_id IN (${placeholders(queueIds.length)})`, ...queueIds);
  }
  if (afterName !== undefined) where.and('name > ?', afterName);
  const [rows] = await db.query<ScheduleRow[]>(`SELECT ${COLUMNS} FROM schedules WHERE ${where} ORDER BY name LIMIT ${limit + 1}`, where.args);
  return rows;
}

export type NewSchedule = Pick<ScheduleRow, 'id' | 'namespace_id' | 'application_id' | 'name' | 'queue_id' | 'next_fire_at'> & { paused: boolean; now: string };

export async function insertSchedule(c: Conn, s: NewSchedule): Promise<void> {
  await c.execute(
    `INSERT INTO schedules (id, namespace_id, application_id, name, revision, paused, current_version, queue_id, next_fire_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, 1, ?, 1, ?, ?, ?, ?)`,
    [s.id, s.namespace_id, s.application_id, s.name, s.paused ? 1 : 0, s.queue_id, s.next_fire_at, s.now, s.now],
  );
}

export async function setCurrentVersion(c: Conn, id: string, number: number, queueId: string, nextFireAt: string | null): Promise<void> {
  await c.execute(
    `UPDATE schedules SET current_version = ?, queue_id = ?, next_fire_at = ?, catchup_remaining = NULL, revision = revision + 1,
            updated_at = UTC_TIMESTAMP(3) WHERE id = ?`,
    [number, queueId, nextFireAt, id],
  );
}

export async function setSchedulePaused(c: Conn, id: string, paused: boolean, nextFireAt: string | null): Promise<void> {
  await c.execute(
    `UPDATE schedules SET paused = ?, next_fire_at = ?, catchup_remaining = NULL, revision = revision + 1, updated_at = UTC_TIMESTAMP(3) WHERE id = ?`,
    [paused ? 1 : 0, nextFireAt, id],
  );
}

export async function markScheduleRetired(c: Conn, id: string, reason: string): Promise<void> {
  await c.execute(
    `UPDATE schedules SET retired_at = UTC_TIMESTAMP(3), retire_reason = ?, next_fire_at = NULL, catchup_remaining = NULL,
            revision = revision + 1, updated_at = UTC_TIMESTAMP(3) WHERE id = ?`,
    [reason, id],
  );
}

/** overlap=skip looks at the newest task. */
export async function setLastTask(c: Conn, id: string, taskId: string): Promise<void> {
  await c.execute('UPDATE schedules SET last_task_id = ? WHERE id = ?', [taskId, id]);
}

export interface DueScheduleRow extends ScheduleRow {
  now: string;
}

/** SKIP LOCKED: a schedule another node is firing is left to it. */
export async function lockDueSchedules(c: Tx, ids: string[]): Promise<DueScheduleRow[]> {
  if (ids.length === 0) return [];
  const [rows] = await c.query<DueScheduleRow[]>(
    `SELECT ${COLUMNS}, UTC_TIMESTAMP(3) AS now FROM schedules
      WHERE id IN (${placeholders(ids.length)}) AND next_fire_at <= UTC_TIMESTAMP(3) AND paused = 0 AND retired_at IS NULL
      ORDER BY id FOR UPDATE SKIP LOCKED`,
    ids,
  );
  return rows;
}

const ADVANCED = ['next_fire_at', 'last_fire_at', 'last_task_id', 'catchup_remaining'] as const satisfies readonly (keyof ScheduleRow)[];
export type Advance = Pick<ScheduleRow, 'id' | (typeof ADVANCED)[number]>;

/** last_task_id keeps its value where the fires made no task. */
export async function advanceSchedules(c: Conn, rows: Advance[]): Promise<void> {
  if (rows.length === 0) return;
  const byId = caseWhen('id', rows.length);
  await c.query(
    `UPDATE schedules SET next_fire_at = ${byId}, last_fire_at = ${byId}, last_task_id = COALESCE(${byId}, last_task_id), catchup_remaining = ${byId}
      WHERE id IN (${placeholders(rows.length)})`,
    [...ADVANCED.flatMap((n) => rows.flatMap((a) => [a.id, a[n]])), ...rows.map((a) => a.id)],
  );
}

export type DueRow = RowDataPacket & Pick<ScheduleRow, 'id' | 'application_id'> & { wait_ms: number };

/** The milliseconds until each fire (≤ 0 = due); no lock. */
export async function dueSchedules(pool: Pool, horizonMs: number, limit: number): Promise<DueRow[]> {
  const [rows] = await pool.query<DueRow[]>(
    `SELECT id, application_id, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), next_fire_at) DIV 1000 AS wait_ms FROM schedules
      WHERE next_fire_at <= UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND ORDER BY next_fire_at LIMIT ${Number(limit)}`,
    [horizonMs * 1000],
  );
  return rows;
}

export async function enabledSchedulesOnQueue(c: Conn, queueId: string): Promise<string[]> {
  const [rows] = await c.execute<RowDataPacket[]>('SELECT id FROM schedules WHERE queue_id = ? AND paused = 0 AND retired_at IS NULL ORDER BY id', [queueId]);
  return rows.map((r) => r.id as string);
}
