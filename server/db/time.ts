// Every stored time is a UTC DATETIME(3) string, without the fraction when it is zero.

export function dbTimeToMs(v: string): number {
  return Date.parse(v.replace(' ', 'T') + (v.length === 19 ? '.000Z' : 'Z'));
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
