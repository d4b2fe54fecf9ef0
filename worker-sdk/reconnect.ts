// The worker's reconnect policy: exponential backoff with jitter, bounded by a number of
// consecutive failed attempts after which the worker stops with a fatal error (a wrong URL or a
// gateway that never comes back must end the process, not retry silently forever), and the errors
// no retry can fix.
import { GatewayError } from './errors.js';

export interface ReconnectPolicy {
  /** First delay, in ms.
   * @default 100 */
  initialDelayMs?: number;
  /** Largest delay, in ms: well under a lease, so a resume happens in time.
   * @default 5000 */
  maxDelayMs?: number;
  /** Consecutive failed connection attempts (no session in between that lasted) before the worker
   * gives up: run() rejects and the 'fatal' event fires. About two minutes with the default
   * delays; `Infinity` retries forever.
   * @default 30 */
  maxAttempts?: number;
}

export const DEFAULT_MAX_ATTEMPTS = 30;

/** The attempt bound of a policy; throws on a nonsensical one. */
export function reconnectLimit(p: ReconnectPolicy | undefined): number {
  const n = p?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  if (!(n === Infinity || (Number.isInteger(n) && n >= 1))) throw new RangeError('reconnect.maxAttempts must be a positive integer or Infinity');
  return n;
}

/** Delay before attempt `failures` + 1: full jitter in the upper half of the exponential ceiling. */
export function backoffMs(p: ReconnectPolicy | undefined, failures: number): number {
  const base = p?.initialDelayMs ?? 100;
  const max = p?.maxDelayMs ?? 5000;
  const ceiling = Math.min(max, base * 2 ** Math.min(failures, 20));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

/** Hello errors that retrying cannot fix: the worker stops and reports them. */
const FATAL_CODES = new Set(['UNAUTHENTICATED', 'PERMISSION_DENIED', 'NOT_FOUND', 'RESOURCE_RETIRED', 'INVALID_ARGUMENT', 'STATE_CONFLICT', 'PROTOCOL_ERROR']);

/** True for a connection failure that no reconnect can fix (a refused credential, a retired queue,
 * a malformed registration): the worker stops at once instead of backing off. */
export function isFatalConnectError(err: unknown): err is GatewayError {
  return err instanceof GatewayError && (FATAL_CODES.has(err.code) || err.status === 401 || err.status === 403);
}
