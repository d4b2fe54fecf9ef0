// Fault injection for the error-boundary tests: with ORBIT_FAULT_INJECTION=1 (test only; never
// set in production) a request header `X-Orbit-Fault: <point>[,<point>…]` arms a one-shot
// exception at that point, so a test can prove that an unexpected throw in each kind of handler
// ends one request or one session and the node keeps serving. Disabled, arm() and hit() do nothing.
// A point `db:<errno>@<path>*<n>` (path a TxPath of server/db/pool.ts) makes the next n
// transactions of that path fail with that real server error (db/injected-errors.ts, wired by
// gateway-main for the retryable error numbers only), to test the retries of every transaction
// path; n = 0 disarms.

export const FAULT_POINTS = ['http', 'frame', 'upgrade', 'timer'] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

export class Faults {
  private readonly armed = new Set<FaultPoint>();
  /** path → the error number and how many more transactions of that path fail with it. */
  private readonly dbArmed = new Map<string, { errno: number; left: number }>();
  constructor(readonly enabled: boolean) {}

  /** Arms the points named in a header value; unknown names are ignored. */
  armFromHeader(value: string | string[] | undefined): void {
    if (!this.enabled || value === undefined) return;
    for (const p of String(value).split(',')) {
      const name = p.trim() as FaultPoint;
      if ((FAULT_POINTS as readonly string[]).includes(name)) this.armed.add(name);
      const db = /^db:(\d{4})@([a-z]+)\*(\d{1,4})$/.exec(p.trim());
      if (db) this.dbArmed.set(db[2]!, { errno: Number(db[1]), left: Number(db[3]) });
    }
  }

  /** The error number the next transaction of `path` is to fail with, or null (counts it down). */
  takeDbFault(path: string): number | null {
    const a = this.enabled ? this.dbArmed.get(path) : undefined;
    if (!a || a.left <= 0) return null;
    a.left--;
    return a.errno;
  }

  /** Throws once if `point` is armed. */
  hit(point: FaultPoint): void {
    if (this.enabled && this.armed.delete(point)) throw new Error(`injected fault at ${point}`);
  }
}
