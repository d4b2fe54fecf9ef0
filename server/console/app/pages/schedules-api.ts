// Shapes of the schedules API (../shared/spec/schedules.md). protocol/ has no schedule types yet
// because the server has no /v1/schedules yet; when it does, replace these with its types. A 404 on
// the list means this server does not offer schedules (the pages say so instead of failing).
import { ApiError, enc, get } from '../api.js';

export interface Schedule {
  id: string;
  namespace_id: string;
  name: string;
  revision: string;
  paused: boolean;
  current_version: number;
  next_fire_at: string | null;
  last_fire_at: string | null;
  created_at: string;
  updated_at: string;
  retired_at?: string;
  /** Filled by the console from the current version (not part of the resource). */
  queue_id?: string;
}

export interface ScheduleVersion {
  number: number;
  created_at: string;
  calendar: { cron: string; timezone?: string } | { every_seconds: number };
  task: Record<string, unknown> & { queue_id: string };
  overlap: 'allow' | 'skip';
  catchup: 'none' | 'latest' | 'all';
  catchup_limit: number;
  starts_at: string | null;
  ends_at: string | null;
}

export interface Fire {
  scheduled_for: string;
  fired_at: string;
  version: number;
  outcome: 'created' | 'skipped_overlap' | 'skipped_catchup' | 'failed_quota';
  task_id?: string;
}

/** First page of schedules with the queue of each current version, or null without the API. */
export async function loadSchedules(): Promise<Schedule[] | null> {
  let list: { schedules: Schedule[] };
  try {
    list = await get<{ schedules: Schedule[] }>('/v1/schedules?limit=100');
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
