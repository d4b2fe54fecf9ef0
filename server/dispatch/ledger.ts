// Collects every counter change, key release and result event of one transaction and writes them
// at the end in one fixed lock order — resource keys (by namespace, key bytes), queues (by id),
// applications (by id), stream heads (by namespace) — the same order the claim round takes them in
// (keys, then its conditional permit updates), so claims, results, cancels and the sweeper never
// deadlock against each other on these rows.
import { withTransaction, type Tx, type Pool, type TxPath } from '../db/pool.js';
import { isCheckRefusal } from '../db/conditional-commit.js';
import { addApplicationCounts, addApplicationCountsWithin, addQueueActive, type LockedKeyRow, releaseKeys, swapKeyHolders } from '../db/ledger-sql.js';
import { appendResultEvents, type PendingEvent } from './events.js';
import { enterWaiting, keysToLock, leaveWaiting, lockKeysSql, type WaitingRow } from '../db/waiting-tasks.js';
import { write } from '../db/pipeline.js';
import { TOKEN_MAX } from '@orbit/protocol/limits';

type EnteredTask = { id: string; namespace_id: string; concurrency_key: Buffer | null; not_before: string | null };
type WaitingOp = { op: 'enter'; t: EnteredTask } | { op: 'leave'; t: WaitingRow & { id: string; not_before: string | null } };

/** The waiting rows a transaction's enters and leaves come to, in the order they happened: a task
 * whose first change left WAITING had a row at the start (deleted; its row as locked), one whose
 * last change entered WAITING has a row at the end (inserted). A task requeued and then cancelled
 * in one transaction (a workflow's released element, cancelled by its run's advancement) has
 * neither; one that left and came back has its old row deleted and a new one inserted. */
function netWaiting(ops: WaitingOp[]): { entered: EnteredTask[]; left: (WaitingRow & { not_before: string | null })[] } {
  const first = new Map<string, WaitingOp>();
  const last = new Map<string, WaitingOp>();
  for (const o of ops) {
    if (!first.has(o.t.id)) first.set(o.t.id, o);
    last.set(o.t.id, o);
  }
  const left = [...first.values()].flatMap((o) => (o.op === 'leave' ? [o.t] : []));
  const entered = [...last.values()].flatMap((o) => (o.op === 'enter' ? [o.t] : []));
  return { entered, left };
}

/** A key hand-off was refused at the end of the transaction (its queue was paused or retired
 * meanwhile): the caller runs the batch again without hand-offs. */
export class HandoffRefused extends Error {
  constructor(
    /** The queues whose permits a hand-off or refill took back in that transaction. */
    readonly queueIds: string[],
  ) {
    super('a hand-off or refill was refused at the flush');
  }
}

/** The HandoffRefused of a failed transaction whose ledger checked hand-off or refill permits, or
 * null: the checks fail their statement (checked assignments, db/conditional-commit.ts isCheckRefusal), which surfaces
 * where the queued statements were sent — the COMMIT. */
export function refusalOf(err: unknown, ledger: PermitLedger | null): HandoffRefused | null {
  if (err instanceof HandoffRefused) return err;
  return ledger && ledger.checksPermits() && isCheckRefusal(err) ? new HandoffRefused(ledger.checkedQueues()) : null;
}

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
  /** Key hand-offs: released attempt → the attempt its key goes to, with its queue and application. */
  private readonly swaps = new Map<string, { newAttemptId: string; queueId: string; applicationId: string }>();
  /** Queues of the hand-offs whose swap applied (known after flushKeys) and of the refills. */
  private readonly handoffQueues = new Set<string>();
  /** Applications whose active count a hand-off or refill took back (checked like the queues). */
  private readonly handoffApps = new Set<string>();
  /** After flush: the token each hand-off attempt got (absent: the swap did not apply). */
  readonly handoffTokens = new Map<string, string>();
  /** Key rows a hand-off locked before the flush (handoff.ts), by namespace. */
  private readonly lockedKeys = new Map<string, LockedKeyRow[]>();
  /** Waiting rows entered and left by this transaction (enterWaiting, leaveWaiting): written in the
   * key phase of the flush, after their key rows are locked (db/waiting-tasks.ts). */
  private readonly waitingOps: WaitingOp[] = [];
  /** Workflow step tasks whose state changed in this transaction: their runs advance before the
   * flush (server/workflows/apply.ts, advanceRunsInTx). Empty for plain tasks. */
  readonly stepTasks: { runId: string; step: string }[] = [];

  /** A task changed state; a workflow step's task is noted for advancement (a plain task: nothing). */
  taskChanged(t: { workflow_run_id: string | null; workflow_step: string | null }): void {
    if (t.workflow_run_id) this.stepTasks.push({ runId: t.workflow_run_id, step: t.workflow_step! });
  }

  /** Task `t` became WAITING in this transaction (its row is written): its waiting row is
   * inserted at the flush, under its key row's lock when it is keyed without not_before. */
  enterWaiting(t: { id: string; namespace_id: string; concurrency_key: Buffer | null; not_before: string | null }): void {
    this.waitingOps.push({ op: 'enter', t });
  }

  /** Task `t` (as locked, WAITING) leaves WAITING in this transaction: its waiting row is deleted
   * at the flush, under its key row's lock when keyed, and its group's next row flagged. */
  leaveWaiting(t: WaitingRow & { id: string; not_before: string | null }): void {
    this.waitingOps.push({ op: 'leave', t });
  }

  /** A live attempt left LEASED/RUNNING: its queue permit, application count and key (if any). */
  releaseAttempt(a: { id: string; queue_id: string; application_id: string; namespace_id: string; concurrency_key: Buffer | null }): void {
    add(this.queueActive, a.queue_id, -1);
    add(this.appActive, a.application_id, -1);
    this.freedQueues.add(a.queue_id);
    if (a.concurrency_key) this.keys.push({ namespaceId: a.namespace_id, key: a.concurrency_key, attemptId: a.id });
  }

  /** The key of a released attempt goes straight to `newAttemptId` of the same queue (see
   * handoff.ts): the key row's holder is swapped with highest_token + 1 in the key phase of the
   * flush, and the new attempt takes back the queue and application permits the old one freed. */
  handOff(oldAttemptId: string, newAttemptId: string, queueId: string, applicationId: string): void {
    // The new attempt's permits are counted only once its swap applied (flushKeys): a swap refused
    // on an exhausted key must not leave a +1 behind (that leaked a queue and an application permit).
    this.swaps.set(oldAttemptId, { newAttemptId, queueId, applicationId });
  }

  /** An unkeyed released attempt's slot goes straight to `newAttemptId` of the same queue, for the
   * same session (server/dispatch/refill.ts): the new attempt takes back the queue and application
   * permits the released one gave up, and the queue is checked under its lock at the flush. */
  refill(queueId: string, applicationId: string): void {
    this.handoffQueues.add(queueId);
    this.handoffApps.add(applicationId);
    add(this.queueActive, queueId, 1);
    add(this.appActive, applicationId, 1);
  }

  /** The key rows of `namespaceId` locked by this transaction (lockKeyRowsSql), for the flush's swaps. */
  keyRowsLocked(namespaceId: string, rows: LockedKeyRow[]): void {
    this.lockedKeys.set(namespaceId, rows);
  }

  /** True when the flush checks permits a hand-off or refill took back (HandoffRefused possible). */
  checksPermits(): boolean {
    return this.handoffQueues.size > 0 || this.handoffApps.size > 0;
  }

  /** The queues of the hand-offs and refills whose permits the flush checks. */
  checkedQueues(): string[] {
    return [...this.handoffQueues];
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
    this.waitingOps.push(...o.waitingOps);
    this.events.push(...o.events);
    for (const q of o.freedQueues) this.freedQueues.add(q);
    this.stepTasks.push(...o.stepTasks);
  }

  event(e: PendingEvent): void {
    this.events.push(e);
  }

  /** Writes everything in the fixed lock order, one statement per table (per namespace for keys
   * and events): the hot rows of a transaction are touched here, at its end, only. */
  /** Writes everything in the fixed lock order (keys, then the hot rows). */
  async flush(c: Tx): Promise<void> {
    await this.flushKeys(c);
    await this.flushCounters(c);
  }

  /** The key phase: per namespace, the key rows of the waiting rows entered and left locked
   * (with the keys released here, in one statement in key order, so no key row is taken out of
   * order), hand-off swaps (their tokens in handoffTokens), then releases; then the waiting rows
   * (db/waiting-tasks.ts: their flags are decided under those locks). Callers that insert
   * hand-off attempts do so between flushKeys and flushCounters, so the hot rows are locked only
   * from flushCounters to the commit. */
  async flushKeys(c: Tx): Promise<void> {
    const byNs = new Map<string, KeyRelease[]>();
    // Taken out as they are written: a later key phase writes only what was recorded since, never
    // a key twice.
    for (const k of this.keys.splice(0)) byNs.set(k.namespaceId, [...(byNs.get(k.namespaceId) ?? []), k]);
    const { entered, left } = netWaiting(this.waitingOps.splice(0));
    const waitingKeys = [
      ...keysToLock(entered),
      ...left.flatMap((t) => (t.concurrency_key ? [{ namespace_id: t.namespace_id, concurrency_key: t.concurrency_key }] : [])),
    ];
    for (const k of waitingKeys) if (!byNs.has(k.namespace_id)) byNs.set(k.namespace_id, []);
    for (const ns of [...byNs.keys()].sort()) {
      const all = byNs.get(ns)!;
      const lock = waitingKeys.some((k) => k.namespace_id === ns)
        ? lockKeysSql([...waitingKeys.filter((k) => k.namespace_id === ns), ...all.map((k) => ({ namespace_id: ns, concurrency_key: k.key }))])
        : null;
      if (lock) await write(c, ...lock);
      let release = all;
      const swapped = all.filter((k) => this.swaps.has(k.attemptId));
      if (swapped.length > 0) {
        // Hand-offs first, in the same statement shape as a claim's grant. Which swaps apply and
        // their tokens follow from the key rows handoff.ts planHandoffs locked and read before it
        // recorded the swaps (one statement per key row: that read, then this queued swap; the
        // read shares its round trip with the successors' read, so the swap needs no answer).
        const locked = this.lockedKeys.get(ns);
        if (!locked) throw new Error('a key hand-off without its key rows locked (handoff.ts planHandoffs records them)');
        for (const k of swapped) {
          const row = locked.find((r) => r.concurrency_key.equals(k.key));
          if (row?.holder_attempt_id !== k.attemptId || BigInt(row.highest_token) >= TOKEN_MAX) continue;
          this.handoffTokens.set(this.swaps.get(k.attemptId)!.newAttemptId, (BigInt(row.highest_token) + 1n).toString());
        }
        await swapKeyHolders(
          c,
          ns,
          swapped.map((k) => ({ key: k.key, from: k.attemptId, to: this.swaps.get(k.attemptId)!.newAttemptId })),
        );
        for (const k of swapped) {
          const sw = this.swaps.get(k.attemptId)!;
          if (!this.handoffTokens.has(sw.newAttemptId)) continue;
          // Applied: the new attempt takes back the permits the released one gave up.
          this.handoffQueues.add(sw.queueId);
          this.handoffApps.add(sw.applicationId);
          add(this.queueActive, sw.queueId, 1);
          add(this.appActive, sw.applicationId, 1);
        }
        // A swap that did not apply (the key is exhausted) is released like any other key.
        release = all.filter((k) => !this.handoffTokens.has(this.swaps.get(k.attemptId)?.newAttemptId ?? ''));
      }
      if (release.length === 0) continue;
      await releaseKeys(
        c,
        ns,
        release.map((k) => ({ key: k.key, attemptId: k.attemptId })),
      );
    }
    await leaveWaiting(c, left);
    await enterWaiting(
      c,
      entered.map((t) => t.id),
      keysToLock(entered).length ? [] : null,
    );
  }

  /** The hot rows: queues, applications, stream heads. */
  async flushCounters(c: Tx): Promise<void> {
    // Every path that changes a step task's state runs the advancement hook (advanceSteps) before
    // its hot rows: one that forgot would commit a step task's change without its run's decision
    // (a released task of a failed fan-out requeued instead of cancelled, a run left stuck).
    // Loud instead: the transaction rolls back.
    if (this.stepTasks.length > 0) throw new Error('workflow step tasks changed but advanceSteps was not called before the flush');
    // Key releases and waiting rows are written by the key phase only: recorded after it (a merged
    // ledger of a workflow's cancels), they would be dropped — a key held by a cancelled attempt,
    // a CANCELLED task's waiting row left claimable. Loud instead: the transaction rolls back.
    if (this.keys.length > 0 || this.waitingOps.length > 0) throw new Error('key releases or waiting rows recorded after the key phase (flushKeys) ran');
    // Queues of hand-offs are written even when their count does not change (the released and
    // the new attempt cancel out), to check under the row lock that they still dispatch.
    const q = sorted(this.queueActive).filter(([id, d]) => d !== 0 || this.handoffQueues.has(id));
    // A queue whose permits a hand-off or refill took back is checked under its lock: paused,
    // retired or over a lowered limit meanwhile → the statement fails, and with it the transaction
    // (HandoffRefused, see refusalOf). Every statement here is queued: they go with the COMMIT.
    if (q.length > 0) await addQueueActive(c, q, [...this.handoffQueues]);
    const apps = new Set([...this.appActive.keys(), ...this.appUnfinished.keys()]);
    for (const id of [...apps].sort()) {
      const da = this.appActive.get(id) ?? 0;
      const du = this.appUnfinished.get(id) ?? 0;
      if (this.handoffApps.has(id)) {
        // Like a claim's conditional update: the permits a hand-off or refill took back must fit
        // the application's limit as it is now (`orbit-admin quota set` may have lowered it), also
        // when the counts do not change (a released and a new attempt cancel out).
        await addApplicationCountsWithin(c, id, da, du);
      } else if (da !== 0 || du !== 0) {
        await addApplicationCounts(c, id, da, du);
      }
    }
    if (this.events.length) await appendResultEvents(c, this.events, { sequences: false });
  }
}

function add(m: Map<string, number>, k: string, d: number): void {
  m.set(k, (m.get(k) ?? 0) + d);
}

function sorted(m: Map<string, number>): [string, number][] {
  return [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** Runs `fn` in a transaction with a fresh ledger (fresh again on each retry of a deadlock), flushes
 * the ledger before the commit, and returns `fn`'s value with the ledger of the run that committed
 * (its freedQueues say which dispatchers to wake). */
export async function withLedgerTx<T>(pool: Pool, path: TxPath, fn: (tx: Tx, ledger: PermitLedger) => Promise<T>): Promise<{ value: T; ledger: PermitLedger }> {
  let ledger = new PermitLedger();
  const value = await withTransaction(pool, path, async (c) => {
    ledger = new PermitLedger();
    const v = await fn(c, ledger);
    await ledger.flush(c);
    return v;
  });
  return { value, ledger };
}

/** Runs `fn` with a fresh ledger inside the caller's transaction and flushes it after: the changes
 * of one step (a workflow's advance, a command's effect) in the ledger's lock order. */
export async function withLedger<T>(c: Tx, fn: (ledger: PermitLedger) => Promise<T>): Promise<{ value: T; ledger: PermitLedger }> {
  const ledger = new PermitLedger();
  const value = await fn(ledger);
  await ledger.flush(c);
  return { value, ledger };
}
