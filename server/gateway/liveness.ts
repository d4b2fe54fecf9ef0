// A stopped worker process keeps its socket open, so only a pong tells it from a live one. The
// session takes no new work while a ping sent on a revocation is unanswered (the freed slot is
// not offered back until the worker answers), or while any ping is unanswered past the timeout.
// A pong carries its ping's sequence number and answers every earlier ping too.

interface Ping {
  seq: number;
  at: number;
  /** Sent because an attempt was revoked without the worker's word: blocks new work at once. */
  revoked: boolean;
}

export class Liveness {
  private seq = 0;
  private readonly unanswered: Ping[] = [];
  private stallCounted = false;

  constructor(
    private readonly sendPing: (data: Buffer) => void,
    private readonly timeoutMs: number,
    private readonly onStall: () => void,
  ) {}

  ping(revoked = false): void {
    const p = { seq: ++this.seq, at: Date.now(), revoked };
    this.unanswered.push(p);
    try {
      this.sendPing(Buffer.from(String(p.seq)));
    } catch {
      /* closing */
    }
  }

  /** A ping with assignments or after a revocation, unless one that covers it is outstanding. */
  probe(revoked = false): void {
    if (revoked ? this.unanswered.some((p) => p.revoked) : this.unanswered.length > 0) return;
    this.ping(revoked);
  }

  /** True when this pong lets the session take work again: it is due a claim round. */
  pong(data: Buffer): boolean {
    const before = this.answering();
    const n = /^[0-9]{1,15}$/.test(data.toString('latin1')) ? Number(data.toString('latin1')) : Number.MAX_SAFE_INTEGER;
    while (this.unanswered.length > 0 && this.unanswered[0]!.seq <= n) this.unanswered.shift();
    if (this.unanswered.length === 0) this.stallCounted = false;
    return !before && this.answering();
  }

  answering(): boolean {
    const first = this.unanswered[0];
    if (!first) return true;
    if (Date.now() - first.at > this.timeoutMs) {
      if (!this.stallCounted) {
        this.stallCounted = true;
        this.onStall();
      }
      return false;
    }
    return !this.unanswered.some((p) => p.revoked);
  }
}
