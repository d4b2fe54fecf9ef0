// Hints the node's frame committer keeps between result batches (server/dispatch/frame-committer.ts).
/** What recent batches learned about queues, so later ones skip work that would be wasted:
 * `refused` — a hand-off or refill was refused (paused, retired, over a lowered limit): not tried
 * again for a second, so a paused queue with attempts still running does not run every result
 * batch twice; `drained` — a refill's candidate read found nothing: no refill read for that queue
 * until new work is signalled on this node (noteWork) or a second passed (work submitted on another
 * node), so an idle queue's results cost no extra round trip. Hints only: a skipped refill leaves
 * the slot to the claim round the result wakes. */
export class QueueHints {
  static readonly TTL_MS = 1_000;
  private readonly refused = new Map<string, number>();
  private readonly drained = new Map<string, number>();

  refusedQueues(now = Date.now()): Set<string> {
    return live(this.refused, now);
  }

  /** Queues refills skip now: refused or drained. */
  refillSkips(now = Date.now()): Set<string> {
    return new Set([...live(this.refused, now), ...live(this.drained, now)]);
  }

  markRefused(queueIds: Iterable<string>): void {
    for (const q of queueIds) this.refused.set(q, Date.now() + QueueHints.TTL_MS);
  }

  markDrained(queueId: string): void {
    this.drained.set(queueId, Date.now() + QueueHints.TTL_MS);
  }

  /** New work or freed permits on the queue (a submit, a release) were signalled on this node. */
  noteWork(queueId: string): void {
    this.drained.delete(queueId);
  }
}

function live(m: Map<string, number>, now: number): Set<string> {
  for (const [q, until] of m) if (until <= now) m.delete(q);
  return new Set(m.keys());
}
