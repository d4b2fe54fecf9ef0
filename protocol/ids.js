// Ids of every Orbit resource (task, attempt, queue, subscription, credential, session, …): 32
// lowercase hex characters (128 random bits, server/ids.ts). One definition for the schemas, the
// router and the frame handlers: a string that does not match can never name anything, so it is
// answered NOT_FOUND before any SQL runs (the columns are ascii_bin; a non-ASCII parameter
// compared with them is a collation error in MariaDB, not a miss).
import { Type } from '@sinclair/typebox';
export const ID_PATTERN = '^[0-9a-f]{32}$';
export const ID_RE = new RegExp(ID_PATTERN);
/** TypeBox schema of an id. */
export const Id = Type.String({ pattern: ID_PATTERN });
export function isId(s) {
    return typeof s === 'string' && ID_RE.test(s);
}
