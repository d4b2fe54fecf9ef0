// A published version made ready to fire. Versions never change, so a node keeps what it compiled.
import type { ScheduleTaskTemplate } from '@orbit/protocol/http-views';
import type { Conn, Pool } from '../db/pool.js';
import { getVersion, type VersionRow } from '../db/schedule-versions.js';
import { normalizeSubmit } from '../dispatch/submit-input.js';
import type { SubmitCommand } from '../dispatch/submit.js';
import { compileCalendar, type CalendarSpec } from './calendar.js';
import { dbTimeToMs as dbMs, msToDbTime as msDb } from '../db/time.js';

export { dbMs, msDb };

export type ReadyVersion = ReturnType<typeof readyVersion>;

function readyVersion(row: VersionRow) {
  const at = (t: string | null) => (t === null ? null : dbMs(t));
  return {
    number: Number(row.number),
    nextAfter: compileCalendar(JSON.parse(row.calendar) as CalendarSpec, dbMs(row.anchor_at), at(row.starts_at), at(row.ends_at)),
    prepared: normalizeSubmit(JSON.parse(row.task) as ScheduleTaskTemplate),
    overlap: row.overlap,
    catchup: row.catchup,
    catchupLimit: Number(row.catchup_limit),
  };
}

/** The task of one fire time of `v`: no receipt, the fire record is its identity. */
export function fireCommand(credential: SubmitCommand['credential'], scheduleId: string, v: ReadyVersion, scheduledFor: string): SubmitCommand {
  return { credential, key: null, prepared: v.prepared, origin: { scheduleId, scheduleVersion: v.number, scheduledFor } };
}

const cache = new Map<string, ReadyVersion>();
const MAX_CACHED = 5000;

export async function loadReadyVersion(db: Pool | Conn, scheduleId: string, number: number): Promise<ReadyVersion | null> {
  const k = `${scheduleId}:${number}`;
  const hit = cache.get(k);
  if (hit) return hit;
  const row = await getVersion(db, scheduleId, number);
  if (!row) return null;
  const ready = readyVersion(row);
  if (cache.size >= MAX_CACHED) cache.clear();
  cache.set(k, ready);
  return ready;
}
