// Every stored time is a UTC DATETIME(3) string, without the fraction when it is zero.
import type { Conn } from './pipeline.js';

export function dbTimeToMs(v: string): number {
  return Date.parse(toIso(v)!);
}

export function msToDbTime(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

export function plusMs(v: string, ms: number): string {
  return msToDbTime(dbTimeToMs(v) + ms);
}

export function toIso(v: string | null | undefined): string | null {
  if (v === null || v === undefined) return null;
  return v.replace(' ', 'T') + (v.length === 19 ? '.000Z' : 'Z');
}

export function fromIso(iso: string): string {
  return msToDbTime(new Date(iso).getTime());
}

/** The database clock. Every stored time is the database's UTC_TIMESTAMP(3), never a gateway's
 * clock, so times computed in the application start from this read. */
export async function dbNow(c: Conn): Promise<string> {
  const [[r]] = (await c.query('SELECT UTC_TIMESTAMP(3) AS now')) as unknown as [[{ now: string }]];
  return r.now;
}
