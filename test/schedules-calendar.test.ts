// Pins the calendar rules of docs/schedules.md on the real cron library (croner) and the runtime's IANA
// zone data: daylight-saving gaps and repeats in Europe/Berlin and America/New_York, month ends,
// @yearly, day-of-month + day-of-week, every_seconds anchors, starts_at/ends_at, invalid input.
import { describe, expect, it } from 'vitest';
import { compileCalendar, cronProblem, instantOf, isTimeZone, wallMs, type CalendarSpec } from '../server/schedules/calendar.js';

/** The next `n` fire times after `from` (ISO strings, UTC). */
function fires(spec: CalendarSpec, from: string, n: number, opts: { anchor?: string; starts?: string; ends?: string } = {}): string[] {
  const nextAfter = compileCalendar(
    spec,
    Date.parse(opts.anchor ?? from),
    opts.starts ? Date.parse(opts.starts) : null,
    opts.ends ? Date.parse(opts.ends) : null,
  );
  const out: string[] = [];
  let t = Date.parse(from);
  for (let i = 0; i < n; i++) {
    const next = nextAfter(t);
    if (next === null) break;
    out.push(new Date(next).toISOString());
    t = next;
  }
  return out;
}

const berlin = (cron: string): CalendarSpec => ({ cron, timezone: 'Europe/Berlin' });
const newYork = (cron: string): CalendarSpec => ({ cron, timezone: 'America/New_York' });
const utc = (cron: string): CalendarSpec => ({ cron, timezone: 'UTC' });

describe('daylight saving: a missing local time fires once, at the first instant after the gap', () => {
  it('Europe/Berlin 02:30 on 2026-03-29 (02:00 CET → 03:00 CEST) fires at 03:00 CEST', () => {
    expect(fires(berlin('30 2 * * *'), '2026-03-27T12:00:00Z', 3)).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:00:00.000Z', // the gap: 03:00 CEST, the first instant after it
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
    ]);
  });

  it('Europe/Berlin every 30 minutes: the gap times collapse into one fire at its end', () => {
    expect(fires(berlin('*/30 * * * *'), '2026-03-29T00:15:00Z', 3)).toEqual([
      '2026-03-29T00:30:00.000Z', // 01:30 CET
      '2026-03-29T01:00:00.000Z', // 02:00 and 02:30 do not exist; 03:00 CEST once
      '2026-03-29T01:30:00.000Z', // 03:30 CEST
    ]);
  });

  it('America/New_York 02:00 on 2026-03-08 (02:00 EST → 03:00 EDT) fires at 03:00 EDT', () => {
    expect(fires(newYork('0 2 * * *'), '2026-03-07T12:00:00Z', 2)).toEqual(['2026-03-08T07:00:00.000Z', '2026-03-09T06:00:00.000Z']);
  });
});

describe('daylight saving: a repeated local time fires once, at its first occurrence', () => {
  it('Europe/Berlin 02:30 on 2026-10-25 (03:00 CEST → 02:00 CET) fires at 02:30 CEST only', () => {
    expect(fires(berlin('30 2 * * *'), '2026-10-24T12:00:00Z', 2)).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
  });

  it('Europe/Berlin every 30 minutes: the second pass of the repeated hour does not fire', () => {
    expect(fires(berlin('*/30 * * * *'), '2026-10-24T23:45:00Z', 4)).toEqual([
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T02:00:00.000Z', // 03:00 CET (02:00 and 02:30 CET are repeats)
      '2026-10-25T02:30:00.000Z',
    ]);
  });

  it('America/New_York 01:30 on 2026-11-01 (02:00 EDT → 01:00 EST) fires at 01:30 EDT only', () => {
    expect(fires(newYork('30 1 * * *'), '2026-10-31T12:00:00Z', 2)).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']);
  });

  it('America/New_York hourly skips the repeated 01:00 EST', () => {
    expect(fires(newYork('0 * * * *'), '2026-11-01T04:30:00Z', 3)).toEqual([
      '2026-11-01T05:00:00.000Z',
      '2026-11-01T07:00:00.000Z',
      '2026-11-01T08:00:00.000Z',
    ]);
  });

  it('a fire time computed from inside the repeated hour is the next day', () => {
    // 01:15 EST, in the second pass: 01:30 already happened (EDT) and is not repeated.
    expect(fires(newYork('30 1 * * *'), '2026-11-01T06:15:00Z', 1)).toEqual(['2026-11-02T06:30:00.000Z']);
  });

  it('maps local times to instants and back', () => {
    expect(new Date(instantOf('Europe/Berlin', Date.UTC(2026, 9, 25, 2, 30))).toISOString()).toBe('2026-10-25T00:30:00.000Z');
    expect(new Date(instantOf('Europe/Berlin', Date.UTC(2026, 2, 29, 2, 30))).toISOString()).toBe('2026-03-29T01:00:00.000Z');
    expect(new Date(wallMs('America/New_York', Date.parse('2026-07-04T16:00:00.250Z'))).toISOString()).toBe('2026-07-04T12:00:00.250Z');
  });
});

describe('calendar fields', () => {
  it('month ends: day 31 fires only in months that have one; Feb 29 only in leap years', () => {
    expect(fires(utc('0 0 31 * *'), '2026-01-31T00:00:00Z', 3)).toEqual(['2026-03-31T00:00:00.000Z', '2026-05-31T00:00:00.000Z', '2026-07-31T00:00:00.000Z']);
    expect(fires(utc('0 12 29 2 *'), '2026-01-01T00:00:00Z', 2)).toEqual(['2028-02-29T12:00:00.000Z', '2032-02-29T12:00:00.000Z']);
  });

  it("@yearly is midnight of January 1st in the schedule's zone", () => {
    expect(fires(utc('@yearly'), '2026-06-01T00:00:00Z', 2)).toEqual(['2027-01-01T00:00:00.000Z', '2028-01-01T00:00:00.000Z']);
    expect(fires(berlin('@yearly'), '2026-06-01T00:00:00Z', 1)).toEqual(['2026-12-31T23:00:00.000Z']);
    expect(fires(utc('@hourly'), '2026-06-01T00:00:00Z', 1)).toEqual(['2026-06-01T01:00:00.000Z']);
  });

  it('day-of-month and day-of-week both restricted: either matches (classic cron)', () => {
    // February 2026: the 1st is a Sunday; Mondays are 2, 9, 16, 23. March 1st is a Sunday.
    expect(fires(utc('0 0 1 * MON'), '2026-01-31T12:00:00Z', 7).map((s) => s.slice(0, 10))).toEqual([
      '2026-02-01',
      '2026-02-02',
      '2026-02-09',
      '2026-02-16',
      '2026-02-23',
      '2026-03-01',
      '2026-03-02',
    ]);
  });

  it('lists, ranges, steps and names', () => {
    expect(fires(utc('15,45 9-10 * JAN-FEB MON-FRI'), '2026-01-01T09:20:00Z', 4)).toEqual([
      '2026-01-01T09:45:00.000Z',
      '2026-01-01T10:15:00.000Z',
      '2026-01-01T10:45:00.000Z',
      '2026-01-02T09:15:00.000Z',
    ]);
    expect(fires(utc('*/20 0 1 1 *'), '2026-01-01T00:00:00Z', 3)).toEqual(['2026-01-01T00:20:00.000Z', '2026-01-01T00:40:00.000Z', '2027-01-01T00:00:00.000Z']);
  });

  it('every_seconds: first fire one period after the anchor, then every period', () => {
    const a = '2026-01-01T00:00:00.250Z';
    expect(fires({ every_seconds: 10 }, a, 3, { anchor: a })).toEqual(['2026-01-01T00:00:10.250Z', '2026-01-01T00:00:20.250Z', '2026-01-01T00:00:30.250Z']);
    // From any point: the grid of the anchor, strictly after it.
    expect(fires({ every_seconds: 10 }, '2026-01-01T00:00:20.250Z', 1, { anchor: a })).toEqual(['2026-01-01T00:00:30.250Z']);
    expect(fires({ every_seconds: 10 }, '2025-12-31T00:00:00Z', 1, { anchor: a })).toEqual(['2026-01-01T00:00:10.250Z']);
  });

  it('starts_at and ends_at bound the fires (both inclusive)', () => {
    expect(fires(utc('0 * * * *'), '2026-01-01T00:00:00Z', 5, { starts: '2026-01-01T03:00:00Z', ends: '2026-01-01T05:00:00Z' })).toEqual([
      '2026-01-01T03:00:00.000Z',
      '2026-01-01T04:00:00.000Z',
      '2026-01-01T05:00:00.000Z',
    ]);
  });
});

describe('invalid calendars', () => {
  it.each([
    ['* * * * * *', /5 fields/],
    ['* * * *', /5 fields/],
    ['60 * * * *', /minute/],
    ['* 24 * * *', /hour/],
    ['0 0 32 * *', /day/i],
    ['0 0 * 13 *', /month/i],
    ['0 0 * * MON#2', /day-of-week/],
    ['0 0 L * *', /day-of-month/],
    ['@every 5m', /alias/],
    ['@reboot', /alias/],
    [' 0 0 * * *', /whitespace/],
    ['0 0 * * FOO', /./],
  ])('%j is refused (%s)', (expr, why) => {
    expect(cronProblem(expr)).toMatch(why);
  });

  it.each(['0 0 * * *', '@daily', '@weekly', '@monthly', '@yearly', '@hourly', '0 0 * * 7', '*/5 1-3 1,15 */2 SUN-SAT'])('%j is accepted', (expr) => {
    expect(cronProblem(expr)).toBeNull();
  });

  it('time zones are IANA names the runtime knows', () => {
    for (const tz of ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'America/Argentina/Buenos_Aires']) expect(isTimeZone(tz), tz).toBe(true);
    for (const tz of ['Mars/Olympus', '+01:00', 'Europe/Berlin ', '', 'CEST2']) expect(isTimeZone(tz), tz).toBe(false);
  });
});
