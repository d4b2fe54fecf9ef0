// A schedule version checked beyond its schema and normalized, so that it can be fingerprinted and
// stored immutable. A refusal names the field by its body path. Checks that need the database (the
// queue, its max_attempts default) are the caller's.
import { OrbitError } from '@orbit/protocol/errors';
import type { ScheduleVersionInput } from '@orbit/protocol/http-schemas';
import { DEFAULT_CATCHUP_LIMIT } from '@orbit/protocol/limits';
import { parseRfc3339 } from '@orbit/protocol/validation';
import { normalizeSubmit } from '../dispatch/submit-input.js';
import { underField } from '../boundary.js';
import { compileCalendar, cronProblem, isTimeZone, type CalendarSpec } from './calendar.js';

function invalid(field: string, problem: string): OrbitError {
  return new OrbitError('INVALID_ARGUMENT', `${field}: ${problem}`, { field });
}

function timestamp(v: string | null | undefined, field: string): number | null {
  if (v === undefined || v === null) return null;
  const t = parseRfc3339(v);
  if (t === null) throw invalid(field, 'must be an RFC 3339 timestamp or null');
  return t;
}

/** The task's max_attempts is still optional here. */
export function normalizeVersion(v: ScheduleVersionInput) {
  const cal = v.calendar;
  let calendar: CalendarSpec;
  if ((cal.cron === undefined) === (cal.every_seconds === undefined)) throw invalid('version.calendar', 'exactly one of cron or every_seconds');
  if (cal.cron !== undefined) {
    const p = cronProblem(cal.cron);
    if (p) throw invalid('version.calendar.cron', p);
    const timezone = cal.timezone ?? 'UTC';
    if (!isTimeZone(timezone)) throw invalid('version.calendar.timezone', `unknown IANA time zone ${JSON.stringify(timezone)}`);
    calendar = { cron: cal.cron, timezone };
  } else {
    if (cal.timezone !== undefined) throw invalid('version.calendar.timezone', 'only with cron (every_seconds is a fixed period)');
    calendar = { every_seconds: cal.every_seconds! };
  }
  const task = underField('version.task', () => normalizeSubmit(v.task).normalized);
  const startsAt = timestamp(v.starts_at, 'version.starts_at');
  const endsAt = timestamp(v.ends_at, 'version.ends_at');
  if (startsAt !== null && endsAt !== null && endsAt <= startsAt) throw invalid('version.ends_at', 'must be after starts_at');
  // A calendar that can never fire (e.g. "0 0 30 2 *") is a mistake, not a schedule.
  if ('cron' in calendar && compileCalendar(calendar, 0, null, null)(Date.UTC(2000, 0, 1)) === null) {
    throw invalid('version.calendar.cron', 'never matches a date');
  }
  return {
    calendar,
    task,
    overlap: v.overlap ?? 'allow',
    catchup: v.catchup ?? 'latest',
    catchup_limit: v.catchup_limit ?? DEFAULT_CATCHUP_LIMIT,
    starts_at: startsAt === null ? null : new Date(startsAt).toISOString(),
    ends_at: endsAt === null ? null : new Date(endsAt).toISOString(),
  };
}

export type NormalizedVersion = ReturnType<typeof normalizeVersion>;
