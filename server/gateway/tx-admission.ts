// Fair admission of the worker sessions' own transactions (renew batches, hello, the session row's
// updates) to the node's database pool: at most `slots` of them hold a connection at once, at most
// `perGroup` for one application, and a freed slot goes to the applications in turn (round-robin
// over those with a waiting transaction, FIFO within one). Within an application the sessions take
// turns by construction: a session has at most one renew batch and one row update waiting.
//
// So the pool's own queue (mysql2's, FIFO) never holds more of these than `slots`, whatever the
// number of sessions or frames, and the node's other work — submits, start/result batches, claim
// rounds, commands, each bounded by its own committer — finds a connection instead of waiting behind
// one tenant's sessions: one session's 20 000 renews used to queue 20 000 transactions there and
// every other producer's POST /v1/tasks waited 24.6 s (issue 18). Nothing is refused here: a
// transaction over its application's share waits for its turn (its session is paused meanwhile by
// its frame window, server/gateway/frame-window.ts).

interface Waiter {
  start: () => void;
}

export class TxAdmission {
  private active = 0;
  private readonly activeOf = new Map<string, number>();
  /** application → waiting transactions; Map order is the round-robin order. */
  private readonly queues = new Map<string, Waiter[]>();
  private waitingCount = 0;

  constructor(
    private readonly slots: number,
    private readonly perGroup: number,
    /** Called with the waiting count whenever it changes (orbit_session_tx_waiting). */
    private readonly onWaiting: (n: number) => void = () => {},
  ) {}

  /** Transactions waiting for a slot (orbit_session_tx_waiting). */
  get waiting(): number {
    return this.waitingCount;
  }

  /** Runs `fn` once `group` (an application id) has a slot; the slot is held until `fn` settles. */
  run<T>(group: string, fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const start = () => {
        this.active++;
        this.activeOf.set(group, (this.activeOf.get(group) ?? 0) + 1);
        // fn runs inside a then: a synchronous throw becomes its rejection, the slot is freed either way.
        Promise.resolve()
          .then(fn)
          .then(resolve, reject)
          .finally(() => {
            this.active--;
            const left = this.activeOf.get(group)! - 1;
            if (left === 0) this.activeOf.delete(group);
            else this.activeOf.set(group, left);
            this.next();
          });
      };
      if (!this.queues.has(group) && this.fits(group)) return start();
      let q = this.queues.get(group);
      if (!q) this.queues.set(group, (q = []));
      q.push({ start });
      this.waitingCount++;
      this.onWaiting(this.waitingCount);
      this.next();
    });
  }

  private fits(group: string): boolean {
    return this.active < this.slots && (this.activeOf.get(group) ?? 0) < this.perGroup;
  }

  /** Fills free slots: each turn to the first application in round-robin order under its share,
   * which then moves to the back of the order. */
  private next(): void {
    while (this.active < this.slots) {
      let picked: string | null = null;
      for (const g of this.queues.keys()) {
        if (this.fits(g)) {
          picked = g;
          break;
        }
      }
      if (picked === null) return;
      const q = this.queues.get(picked)!;
      const w = q.shift()!;
      this.queues.delete(picked);
      if (q.length > 0) this.queues.set(picked, q);
      this.waitingCount--;
      this.onWaiting(this.waitingCount);
      w.start();
    }
  }
}
