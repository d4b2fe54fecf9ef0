// The one conversion between the database's times and the code's: every time the database stores
// is a DATETIME(3) in UTC (UTC_TIMESTAMP(3)), read as a string (`dateStrings`, db/pool.ts) like
// `2026-11-30 01:02:03.456` — or without the fraction when it is zero (`2026-11-30 01:02:03`).

/** DATETIME(3) string (UTC) → epoch ms. */
export function dbTimeToMs(v: string): number {
  return Date.parse(v.replace(' ', 'T') + (v.length === 19 ? '.000Z' : 'Z'));
}

/** epoch ms → DATETIME(3) string (UTC). */
export function msToDbTime(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

/** DATETIME(3) string + ms, as a DATETIME(3) string. */
export function plusMs(v: string, ms: number): string {
  return msToDbTime(dbTimeToMs(v) + ms);
}

/** `2026-11-30 01:02:03.456` (DATETIME(3) as string, UTC) → `2026-11-30T01:02:03.456Z`. */
export function toIso(v: string | null | undefined): string | null {
  if (v === null || v === undefined) return null;
  return v.replace(' ', 'T') + (v.length === 19 ? '.000Z' : 'Z');
}

/** RFC 3339 → DATETIME(3) string in UTC. */
export function fromIso(iso: string): string {
  return msToDbTime(new Date(iso).getTime());
}
