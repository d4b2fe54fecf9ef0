// Fire times of a version's calendar, as pure functions of epoch milliseconds: the caller passes
// the database clock. Cron is matched on local wall-clock time read as UTC, so croner applies no
// daylight-saving logic of its own, whose Vixie-cron rules differ from Orbit's: a local time in a
// spring-forward gap fires once, at the first instant after the gap; a repeated local time fires
// once, at its first occurrence.
import { Cron } from 'croner';

export type CalendarSpec = { cron: string; timezone: string } | { every_seconds: number };

/** The first fire time strictly after `afterMs`; null when there is none. */
export type NextFire = (afterMs: number) => number | null;

// croner's extensions (seconds and year fields, L, W, #, ?, +) are refused, so that an expression
// means the same here as in any other cron.
const ALIASES = new Set(['@hourly', '@daily', '@weekly', '@monthly', '@yearly']);
const ATOM = '(\\*|[0-9]{1,2}|[A-Za-z]{3})';
const ITEM = `${ATOM}(-${ATOM})?(/[0-9]{1,2})?`;
const FIELD = new RegExp(`^${ITEM}(,${ITEM})*$`);
const FIELD_NAMES = ['minute', 'hour', 'day-of-month', 'month', 'day-of-week'];

export function cronProblem(expr: string): string | null {
  if (expr !== expr.trim()) return 'must not start or end with whitespace';
  if (expr.startsWith('@')) return ALIASES.has(expr) ? null : `unknown alias (one of ${[...ALIASES].join(' ')})`;
  const fields = expr.split(/\s+/);
  if (fields.length !== 5) return `must have 5 fields (minute hour day-of-month month day-of-week), got ${fields.length}`;
  for (let i = 0; i < 5; i++) {
    if (!FIELD.test(fields[i]!)) return `${FIELD_NAMES[i]} field ${JSON.stringify(fields[i])} is not a number, name, *, list, range or step`;
  }
  try {
    compileCron(expr);
  } catch (err) {
    return (err as Error).message.replace(/^CronPattern: /, '');
  }
  return null;
}

function compileCron(expr: string): Cron {
  return new Cron(expr, { timezone: 'UTC', mode: '5-part', paused: true });
}

export function isTimeZone(tz: string): boolean {
  // Offsets such as "+01:00" are accepted by newer Intl versions but are not zone names.
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/.test(tz)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(tz, f);
  }
  return f;
}

/** Local wall-clock time of an instant in `tz`, read as UTC. */
export function wallMs(tz: string, instant: number): number {
  if (tz === 'UTC') return instant;
  const p: Record<string, number> = {};
  for (const part of formatter(tz).formatToParts(new Date(instant))) if (part.type !== 'literal') p[part.type] = Number(part.value);
  const ms = ((instant % 1000) + 1000) % 1000;
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!) + ms;
}

/** The first occurrence of a repeated local time; the first instant after a gap for a missing one. */
export function instantOf(tz: string, wall: number): number {
  if (tz === 'UTC') return wall;
  const DAY = 86_400_000;
  const before = wallMs(tz, wall - DAY) - (wall - DAY);
  const after = wallMs(tz, wall + DAY) - (wall + DAY);
  const candidates = [wall - before, wall - after].filter((i) => wallMs(tz, i) === wall).sort((a, b) => a - b);
  if (candidates.length > 0) return candidates[0]!;
  // In a gap (after > before): the transition lies in [wall - after, wall - before]; find the
  // first second whose offset is the new one.
  let lo = Math.floor((wall - after) / 1000);
  let hi = Math.ceil((wall - before) / 1000);
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallMs(tz, mid * 1000) - mid * 1000 === after) hi = mid;
    else lo = mid + 1;
  }
  return lo * 1000;
}

/** Cron matches local wall-clock times; each is mapped back to its instant. */
function cronNext(expr: string, tz: string): NextFire {
  const cron = compileCron(expr);
  return (afterMs) => {
    let wall = wallMs(tz, afterMs);
    // Only the second pass of a repeated hour loops, once per matching local time in that hour.
    for (let round = 0; round < 10_000; round++) {
      const next = cron.nextRun(new Date(wall));
      if (!next) return null;
      const candidate = next.getTime();
      const at = instantOf(tz, candidate);
      if (at > afterMs) return at;
      wall = candidate;
    }
    return null;
  };
}

/** Within [starts_at, ends_at], both inclusive. every_seconds counts from `anchorMs`. */
export function compileCalendar(spec: CalendarSpec, anchorMs: number, startsAtMs: number | null, endsAtMs: number | null): NextFire {
  const periodMs = 'cron' in spec ? 0 : spec.every_seconds * 1000;
  const next =
    'cron' in spec
      ? cronNext(spec.cron, spec.timezone)
      : (afterMs: number) => anchorMs + Math.max(1, Math.floor((afterMs - anchorMs) / periodMs) + 1) * periodMs;
  return (afterMs) => {
    const t = next(startsAtMs !== null && afterMs < startsAtMs ? startsAtMs - 1 : afterMs);
    return t === null || (endsAtMs !== null && t > endsAtMs) ? null : t;
  };
}
