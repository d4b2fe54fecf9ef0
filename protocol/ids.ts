// Ids of every Orbit resource (task, attempt, queue, subscription, credential, session, …): 32
// lowercase hex characters (128 random bits, server/ids.ts). One definition for the schemas (the
// TypeBox `Id` of primitives.ts), the router and the frame handlers: a string that does not match
// can never name anything, so it is answered NOT_FOUND before any SQL runs (the columns are
// ascii_bin; a non-ASCII parameter compared with them is a collation error in MariaDB, not a miss).

export const ID_PATTERN = '^[0-9a-f]{32}$';
export const ID_RE = new RegExp(ID_PATTERN);

export function isId(s: unknown): s is string {
  return typeof s === 'string' && ID_RE.test(s);
}
