// The schedules API as the console reads it, typed by the server's own response shapes. A 404 on
// the list means a server without /v1/schedules: the pages say so instead of failing.
import type { Schedule as ScheduleView, ScheduleVersion } from '../../../../protocol/http-views.js';
import { ApiError, enc, get } from '../api.js';

/** The queue is filled in by the console: it is not part of the resource. */
export type Schedule = ScheduleView & { queue_id?: string };

/** null without the API. */
export async function loadSchedules(): Promise<Schedule[] | null> {
  let list: { schedules: ScheduleView[] };
  try {
    list = await get<{ schedules: ScheduleView[] }>('/v1/schedules?limit=100');
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
  return Promise.all(
    list.schedules.map(async (s) => {
      const v = await get<{ version: ScheduleVersion }>(`/v1/schedules/${enc(s.id)}/versions/${s.current_version}`).catch(() => null);
      return { ...s, queue_id: v?.version.task.queue_id };
    }),
  );
}
