// Collects every counter change, key release and result event of one transaction and writes them
// at the end in one fixed lock order — resource keys (by namespace, key bytes), queues (by id),
// applications (by id), stream heads (by namespace) — the same order the claim round takes them in
// (keys, then its conditional permit updates), so claims, results, cancels and the sweeper never
// deadlock against each other on these rows.
import type { Conn } from '../db/pool.js';
import { appendResultEvents, type PendingEvent } from './events.js';

interface KeyRelease {
  namespaceId: string;
  key: Buffer;
  attemptId: string;
}

export class PermitLedger {
  private readonly queueActive = new Map<string, number>();
  private readonly appActive = new Map<string, number>();
  private readonly appUnfinished = new Map<string, number>();
  private readonly keys: KeyRelease[] = [];
  private readonly events: PendingEvent[] = [];
  /** Queues whose permits were released (the dispatcher is woken for them after commit). */
  readonly freedQueues = new Set<string>();

  /** A live attempt left LEASED/RUNNING: its queue permit, application count and key (if any). */
  releaseAttempt(a: { id: string; queue_id: string; application_id: string; namespace_id: string; concurrency_key: Buffer | null }): void {
    add(this.queueActive, a.queue_id, -1);
    add(this.appActive, a.application_id, -1);
    this.freedQueues.add(a.queue_id);
    if (a.concurrency_key) this.keys.push({ namespaceId: a.namespace_id, key: a.concurrency_key, attemptId: a.id });
  }

  /** A task became terminal (SUCCEEDED, FAILED, CANCELLED, DEADLINE_EXCEEDED). */
  taskFinished(applicationId: string): void {
    add(this.appUnfinished, applicationId, -1);
  }

  /** A task left NEEDS_REVIEW back to unfinished work, or any other +1. */
  taskUnfinished(applicationId: string): void {
    add(this.appUnfinished, applicationId, 1);
  }

  /** Adds another ledger's changes (an item of a coalesced batch that committed). */
  merge(o: PermitLedger): void {
    for (const [k, d] of o.queueActive) add(this.queueActive, k, d);
    for (const [k, d] of o.appActive) add(this.appActive, k, d);
    for (const [k, d] of o.appUnfinished) add(this.appUnfinished, k, d);
    this.keys.push(...o.keys);
    this.events.push(...o.events);
    for (const q of o.freedQueues) this.freedQueues.add(q);
  }

  event(e: PendingEvent): void {
    this.events.push(e);
  }

  /** Writes everything in the fixed lock order, one statement per table (per namespace for keys
   * and events): the hot rows of a transaction are touched here, at its end, only. */
  async flush(c: Conn): Promise<void> {
    const byNs = new Map<string, KeyRelease[]>();
    for (const k of this.keys) byNs.set(k.namespaceId, [...(byNs.get(k.namespaceId) ?? []), k]);
    for (const ns of [...byNs.keys()].sort()) {
      const list = byNs.get(ns)!;
      // Conditional on the holder: a duplicate or late release never frees a later attempt's
      // permit. An attempt holds one key, so "key in the list and holder in the list" is exact.
      // The primary-key range is walked in key order, the order claims lock keys in.
      await c.query(
        `UPDATE resource_keys SET holder_attempt_id = NULL, version = version + 1, updated_at = UTC_TIMESTAMP(3)
          WHERE namespace_id = ? AND concurrency_key IN (${list.map(() => '?').join(',')}) AND holder_attempt_id IN (${list.map(() => '?').join(',')})`,
        [ns, ...list.map((k) => k.key), ...list.map((k) => k.attemptId)],
      );
    }
    const q = sorted(this.queueActive).filter(([, d]) => d !== 0);
    if (q.length > 0) {
      await c.query(
        `UPDATE queues SET active_attempts = active_attempts + CASE id ${q.map(() => 'WHEN ? THEN ?').join(' ')} END
          WHERE id IN (${q.map(() => '?').join(',')})`,
        [...q.flat(), ...q.map(([id]) => id)],
      );
    }
    const apps = new Set([...this.appActive.keys(), ...this.appUnfinished.keys()]);
    for (const id of [...apps].sort()) {
      const da = this.appActive.get(id) ?? 0;
      const du = this.appUnfinished.get(id) ?? 0;
      if (da !== 0 || du !== 0) {
        await c.execute('UPDATE applications SET active_attempts = active_attempts + ?, unfinished_tasks = unfinished_tasks + ? WHERE id = ?', [da, du, id]);
      }
    }
    if (this.events.length) await appendResultEvents(c, this.events);
  }
}

function add(m: Map<string, number>, k: string, d: number): void {
  m.set(k, (m.get(k) ?? 0) + d);
}

function sorted(m: Map<string, number>): [string, number][] {
  return [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}
