// The session's idle timeout (docs/worker-protocol.md: the gateway pings every 15 s): `onIdle` runs
// once nothing arrived for `ms`. Every incoming frame calls `touch()`, so it is a timestamp and
// nothing else; the one timer is re-armed only when it fires. The former `Timeout.refresh()` per
// frame re-inserted the timer in Node's list (a libuv clock read and a dozen JS calls, run
// unoptimized at the bench's rates).
export class IdleWatch {
  private lastAt = 0;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly ms: number,
    private readonly onIdle: () => void,
  ) {}

  touch(): void {
    if (this.stopped) return;
    this.lastAt = Date.now();
    if (!this.timer) this.arm(this.ms);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => {
      if (this.stopped) return;
      const quiet = Date.now() - this.lastAt;
      if (quiet < this.ms) return this.arm(this.ms - quiet);
      this.stopped = true;
      this.onIdle();
    }, ms);
    this.timer.unref();
  }
}
