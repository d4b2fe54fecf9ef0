// Fault injection for the error-boundary tests: with ORBIT_FAULT_INJECTION=1 (test only; never
// set in production) a request header `X-Orbit-Fault: <point>[,<point>…]` arms a one-shot
// exception at that point, so a test can prove that an unexpected throw in each kind of handler
// ends one request or one session and the node keeps serving. Disabled, arm() and hit() do nothing.
export const FAULT_POINTS = ['http', 'frame', 'upgrade', 'timer'] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

export class Faults {
  private readonly armed = new Set<FaultPoint>();
  constructor(readonly enabled: boolean) {}

  /** Arms the points named in a header value; unknown names are ignored. */
  armFromHeader(value: string | string[] | undefined): void {
    if (!this.enabled || value === undefined) return;
    for (const p of String(value).split(',')) {
      const name = p.trim() as FaultPoint;
      if ((FAULT_POINTS as readonly string[]).includes(name)) this.armed.add(name);
    }
  }

  /** Throws once if `point` is armed. */
  hit(point: FaultPoint): void {
    if (this.enabled && this.armed.delete(point)) throw new Error(`injected fault at ${point}`);
  }
}
