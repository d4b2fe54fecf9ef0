// Field rules that JSON Schema cannot state exactly (code points rather than UTF-16 units, Unicode
// properties). Pure functions shared by the gateway and the SDK.
import { KEY_MAX_CODE_POINTS, UINT64_MAX } from './limits.js';
import { UINT64_RE } from './primitives.js';

const CC = /\p{Cc}/u;
const EDGE_WHITESPACE = /^\p{White_Space}|\p{White_Space}$/u;

/** Number of Unicode code points (a surrogate pair counts once, a lone surrogate once). */
export function codePointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Why a concurrency_key is invalid, or null when it is valid. `""` is handled by the caller
 * (it means "no key"). */
export function concurrencyKeyProblem(key: string): string | null {
  if (!key.isWellFormed()) return 'must be valid UTF-8 (lone surrogate)';
  const n = codePointLength(key);
  if (n < 1 || n > KEY_MAX_CODE_POINTS) return `must be 1-${KEY_MAX_CODE_POINTS} Unicode code points`;
  if (CC.test(key)) return 'must not contain control characters';
  if (EDGE_WHITESPACE.test(key)) return 'must not start or end with whitespace';
  return null;
}

/** business_key: 1-191 code points (KEY_MAX_CODE_POINTS), well-formed. */
export function businessKeyProblem(key: string): string | null {
  if (!key.isWellFormed()) return 'must be valid UTF-8 (lone surrogate)';
  const n = codePointLength(key);
  if (n < 1 || n > KEY_MAX_CODE_POINTS) return `must be 1-${KEY_MAX_CODE_POINTS} Unicode code points`;
  return null;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/** Parses an RFC 3339 timestamp; returns epoch ms or null. */
export function parseRfc3339(s: string): number | null {
  const m = RFC3339.exec(s);
  if (!m) return null;
  const [, y, mo, d, h, mi, se] = m.map(Number) as number[];
  if (mo! < 1 || mo! > 12 || d! < 1 || d! > 31 || h! > 23 || mi! > 59 || se! > 60) return null;
  // Date.parse rolls impossible days over (2026-02-30 → 2026-03-02); RFC 3339 does not.
  if (new Date(Date.UTC(y!, mo! - 1, d!)).getUTCDate() !== d) return null;
  const t = Date.parse(s);
  return Number.isFinite(t) ? t : null;
}

/** Idempotency-Key: 1-255 visible ASCII characters (0x21-0x7E); defined in primitives.ts. */
export { IDEMPOTENCY_KEY_RE } from './primitives.js';

/** 32 lowercase hex characters. */
export { ID_RE, isId } from './ids.js';

/** uint64 as a decimal string (UINT64_RE of primitives.ts, UINT64_MAX of limits.ts, re-exported
 * for existing imports). */
export { UINT64_RE } from './primitives.js';
export { UINT64_MAX } from './limits.js';
export function isUint64String(s: string): boolean {
  return UINT64_RE.test(s) && BigInt(s) <= UINT64_MAX;
}

/** Canonical JSON: object keys sorted at every depth, no whitespace. Used for fingerprints. */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return '[' + v.map(canonicalJson).join(',') + ']';
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson(o[k])).join(',') + '}';
}
