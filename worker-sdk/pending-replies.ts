// The `start` and `result` requests of one session that wait for their reply, by attempt id. The
// gateway answers one attempt's requests in order: a reply of a kind settles the oldest request of
// that kind, an error frame about the attempt the oldest request of any kind.
import type { ResultOkFrame, StartOkFrame } from '@orbit/protocol/frames';

type Reply = StartOkFrame | ResultOkFrame;
type Pending = { kind: 'start' | 'result'; resolve: (f: Reply) => void; reject: (e: Error) => void };

export class PendingReplies {
  private readonly byAttempt = new Map<string, Pending[]>();

  /** Waits for the reply of `kind` about `attemptId`: `resolve` receives the frame of that kind
   * (start.ok for 'start', result.ok for 'result'). */
  add(attemptId: string, kind: 'start' | 'result', resolve: (f: Reply) => void, reject: (e: Error) => void): void {
    const list = this.byAttempt.get(attemptId);
    const p: Pending = { kind, resolve, reject };
    if (list) list.push(p);
    else this.byAttempt.set(attemptId, [p]);
  }

  /** Hands `frame` to the oldest request of `kind` about the attempt; none (a late reply to a
   * request of an earlier session) is ignored. */
  settle(attemptId: string, kind: 'start' | 'result', frame: Reply): void {
    const list = this.byAttempt.get(attemptId);
    const i = list?.findIndex((p) => p.kind === kind) ?? -1;
    if (!list || i < 0) return;
    const [p] = list.splice(i, 1);
    if (list.length === 0) this.byAttempt.delete(attemptId);
    p!.resolve(frame);
  }

  /** Rejects the oldest request about the attempt with `err()`; false when none waits. */
  rejectOldest(attemptId: string, err: () => Error): boolean {
    const list = this.byAttempt.get(attemptId);
    if (!list || list.length === 0) return false;
    const p = list.shift()!;
    if (list.length === 0) this.byAttempt.delete(attemptId);
    p.reject(err());
    return true;
  }

  /** Rejects every waiting request (the session ended). */
  rejectAll(err: Error): void {
    for (const list of this.byAttempt.values()) for (const p of list) p.reject(err);
    this.byAttempt.clear();
  }
}
