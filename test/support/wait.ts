// Polling in tests goes through vitest's own pollers (vi.waitUntil for "until it returns something
// truthy", vi.waitFor for "until it stops throwing"), not hand-rolled loops. These wrappers only
// add what the suites' old helpers had: a message naming what was awaited, and a non-throwing form.
import { vi } from 'vitest';

type Truthy<T> = Exclude<T, null | undefined | false | 0 | ''>;

/** vi.waitUntil's message when it times out (an error thrown by the callback passes through as is). */
const TIMED_OUT = 'Timed out in waitUntil!';

const isTimeout = (err: unknown): boolean => err instanceof Error && err.message === TIMED_OUT;

/** Polls `fn` every `interval` ms until it returns a truthy value, which is returned; after
 * `timeout` ms fails with "timed out waiting for <what>". An error thrown by `fn` fails at once. */
export async function pollUntil<T>(what: string, fn: () => T | Promise<T>, opts: { timeout: number; interval?: number }): Promise<Truthy<T>> {
  try {
    return (await vi.waitUntil(fn, { timeout: opts.timeout, interval: opts.interval ?? 50 })) as Truthy<T>;
  } catch (err) {
    if (isTimeout(err)) throw new Error(`timed out waiting for ${what}`);
    throw err;
  }
}

/** Like pollUntil, but never fails for time: resolves with `fn`'s value once `ok` holds, or with the
 * value of one last call after `timeout` ms, for the caller to assert on. */
export async function pollValue<T>(fn: () => Promise<T>, ok: (v: T) => boolean, opts: { timeout: number; interval?: number }): Promise<T> {
  let last: { v: T } | undefined;
  try {
    await vi.waitUntil(async () => ok((last = { v: await fn() }).v), { timeout: opts.timeout, interval: opts.interval ?? 50 });
    return last!.v;
  } catch (err) {
    if (!isTimeout(err)) throw err;
    return fn();
  }
}
