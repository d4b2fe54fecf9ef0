// Does the worker behind a session answer? A worker process that is stopped (SIGSTOP, a debugger,
// a long GC pause, a frozen VM) keeps its socket open, so only an answer tells it from a live one.
// The session pings — every ORBIT_PING_INTERVAL_MS, with each batch of assignments (when no ping
// is outstanding), and when one of its attempts was revoked for lack of a start or renew — and
// takes no new work (claims, key hand-offs, refills) while
//   - a ping sent on such a revocation is unanswered: the slot that revocation frees is not
//     offered to the same worker until it has answered (a live worker answers within a round
//     trip; the claim round its pong triggers then fills the slot), or
//   - any ping is unanswered for longer than ORBIT_PONG_TIMEOUT_MS: an assignment sent to a
//     worker that stopped is followed by no more (issue 18: a stopped worker was assigned the
//     next task of a key twice, each attempt sat out its lease).
// A pong carries its ping's sequence number (RFC 6455: the same application data), so it answers
// that ping and every earlier one; a pong without a known number answers all.

interface Ping {
  seq: number;
  at: number;
  /** Sent because an attempt was revoked without the worker's word: blocks new work at once. */
  revoked: boolean;
}

export class Liveness {
  private seq = 0;
  /** Unanswered pings, oldest first (at most a few: see probe()). */
  private readonly unanswered: Ping[] = [];
  /** The current stall (a ping unanswered past the timeout) was counted. */
  private stallCounted = false;

  constructor(
    private readonly sendPing: (data: Buffer) => void,
    private readonly timeoutMs: number,
    /** Called once per stall: a ping went unanswered for longer than the timeout. */
    private readonly onStall: () => void,
  ) {}

  /** Sends a ping now (the heartbeat's, or a probe). */
  ping(revoked = false): void {
    const p = { seq: ++this.seq, at: Date.now(), revoked };
    this.unanswered.push(p);
    try {
      this.sendPing(Buffer.from(String(p.seq)));
    } catch {
      /* closing */
    }
  }

  /** A ping with assignments (none when one is outstanding: that one's timeout covers them), or
   * after a revocation (`revoked`; none when such a ping is outstanding already). */
  probe(revoked = false): void {
    if (revoked ? this.unanswered.some((p) => p.revoked) : this.unanswered.length > 0) return;
    this.ping(revoked);
  }

  /** A pong arrived. True when the session took no work before and does now (it is due for a
   * claim round). */
  pong(data: Buffer): boolean {
    const before = this.answering();
    const n = /^[0-9]{1,15}$/.test(data.toString('latin1')) ? Number(data.toString('latin1')) : Number.MAX_SAFE_INTEGER;
    while (this.unanswered.length > 0 && this.unanswered[0]!.seq <= n) this.unanswered.shift();
    if (this.unanswered.length === 0) this.stallCounted = false;
    return !before && this.answering();
  }

  /** Whether the session may get new work now (see the file comment). */
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
