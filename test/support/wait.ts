// The tests' one way to wait. Polling goes through vitest's own poller (vi.waitUntil), not
// hand-rolled loops, in one argument order everywhere: what is awaited, the probe, then the time
// (ms, or { timeout, interval }). `waitFor` fails when the time is up; `waitForValue` never fails
// for time and hands back the last value, for the caller's own assertion. `sleep` is only for
// showing that something does NOT happen within a time (to wait FOR something, poll).
import { vi } from 'vitest';

export type Truthy<T> = Exclude<T, null | undefined | false | 0 | ''>;

/** A time limit in ms (polled every 50 ms), or the limit and the polling interval. */
export type WaitTime = number | { timeout: number; interval?: number };

/** For in-process fakes that answer within a tick: 5 s, polled every 10 ms. */
export const FAST: WaitTime = { timeout: 5000, interval: 10 };

/** vi.waitUntil's message when it times out (an error thrown by the callback passes through as is). */
const TIMED_OUT = 'Timed out in waitUntil!';

const isTimeout = (err: unknown): boolean => err instanceof Error && err.message === TIMED_OUT;

const opts = (time: WaitTime): { timeout: number; interval: number } =>
  typeof time === 'number' ? { timeout: time, interval: 50 } : { timeout: time.timeout, interval: time.interval ?? 50 };

/** Polls `fn` until it returns a truthy value, which is returned; after `time` (default 5 s) fails
 * with "timed out waiting for <what>". An error thrown by `fn` fails at once. */
export async function waitFor<T>(what: string, fn: () => T | Promise<T>, time: WaitTime = 5000): Promise<Truthy<T>> {
  try {
    return (await vi.waitUntil(fn, opts(time))) as Truthy<T>;
  } catch (err) {
    if (isTimeout(err)) throw new Error(`timed out waiting for ${what}`);
    throw err;
  }
}

/** Like waitFor, but never fails for time: resolves with `fn`'s value once `ok` holds, or with the
 * value of one last call after `time` (default 5 s), for the caller to assert on. */
export async function waitForValue<T>(fn: () => T | Promise<T>, ok: (v: T) => boolean, time: WaitTime = 5000): Promise<T> {
  let last: { v: T } | undefined;
  try {
    await vi.waitUntil(async () => ok((last = { v: await fn() }).v), opts(time));
    return last!.v;
  } catch (err) {
    if (!isTimeout(err)) throw err;
    return fn();
  }
}

/** A fixed wait, only to show that something does NOT happen within `ms` (or to space out load). */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
