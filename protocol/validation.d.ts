/** Number of Unicode code points (a surrogate pair counts once, a lone surrogate once). */
export declare function codePointLength(s: string): number;
/** Why a concurrency_key is invalid, or null when it is valid. `""` is handled by the caller
 * (it means "no key"). */
export declare function concurrencyKeyProblem(key: string): string | null;
/** business_key: 1-191 code points, well-formed. */
export declare function businessKeyProblem(key: string): string | null;
/** Parses an RFC 3339 timestamp; returns epoch ms or null. */
export declare function parseRfc3339(s: string): number | null;
/** Idempotency-Key: 1-255 visible ASCII characters (0x21-0x7E). */
export declare const IDEMPOTENCY_KEY_RE: RegExp;
/** 32 lowercase hex characters. */
export { ID_RE, isId } from './ids.js';
/** uint64 as a decimal string. */
export declare const UINT64_RE: RegExp;
export declare const UINT64_MAX = 18446744073709551615n;
export declare function isUint64String(s: string): boolean;
/** Canonical JSON: object keys sorted at every depth, no whitespace. Used for fingerprints. */
export declare function canonicalJson(v: unknown): string;
