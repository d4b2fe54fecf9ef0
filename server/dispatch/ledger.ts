// Collects the counter changes, key releases, waiting-row changes and result events of one
// transaction and writes them at its end in one lock order: workflow advancement (it changes more
// tasks), resource keys (by namespace, key bytes) and waiting rows, queues, applications, stream
// heads — the claim round's order, so nothing deadlocks on these rows.
import { withTransaction, type Tx, type Pool, type TxPath } from '../db/pool.js';
import { addApplicationCounts, addQueueActive, releaseKeys } from '../db/ledger-sql.js';
import { allocateSequences, insertResultEvents } from '../db/result-events.js';
import { enterWaiting, keysToLock, leaveWaiting, lockKeysSql, type WaitingRow } from '../db/waiting-tasks.js';
import { write } from '../db/pipeline.js';
import { groupBy } from '../group-by.js';

/** Advances the runs of the step tasks a ledger noted, in its transaction; returns the queues that got
 * new tasks. Passed in by the node (workflows/apply.ts): dispatch imports no other domain. */
export type StepAdvancer = (tx: Tx, ledger: PermitLedger) => Promise<string[]>;

type EnteredTask = { id: string; namespace_id: string; concurrency_key: Buffer | null; not_before: string | null };
type WaitingOp = { op: 'enter'; t: EnteredTask } | { op: 'leave'; t: WaitingRow & { id: string; not_before: string | null } };

/** What a transaction's enters and leaves come to: a task whose first change left WAITING had a row
 * (deleted), one whose last change entered WAITING needs one (inserted). */
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
  private readonly waitingOps: WaitingOp[] = [];
  /** Queues whose permits were released or that got new tasks: woken after the commit. */
  readonly freedQueues = new Set<string>();
  /** Workflow step tasks whose state changed: their runs advance at the flush. */
  readonly stepTasks: { runId: string; step: string }[] = [];

  /** A task changed state; a workflow step's task is noted for advancement (a plain task: nothing). */
  taskChanged(t: { workflow_run_id: string | null; workflow_step: string | null }): void {
    if (t.workflow_run_id) this.stepTasks.push({ runId: t.workflow_run_id, step: t.workflow_step! });
  }

  /** Task `t` became WAITING: its waiting row is inserted at the flush (under its key row's lock). */
  enterWaiting(t: EnteredTask): void {
    this.waitingOps.push({ op: 'enter', t });
  }

  /** Task `t` leaves WAITING: its waiting row is deleted at the flush (under its key row's lock). */
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

  /** A task became terminal (SUCCEEDED, FAILED, CANCELLED, DEADLINE_EXCEEDED). */
  taskFinished(applicationId: string): void {
    add(this.appUnfinished, applicationId, -1);
  }

  /** Adds another ledger's changes (a workflow plan's, once it applied). */
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

  /** Writes everything once, in the lock order; the hot rows' statements travel with the COMMIT. */
  async flush(c: Tx, advance: StepAdvancer): Promise<void> {
    if (this.stepTasks.length > 0) for (const q of await advance(c, this)) this.freedQueues.add(q);
    await this.writeKeys(c);
    await this.writeCounters(c);
  }

  /** Per namespace, the key rows of the waiting rows and released keys locked in one statement in key
   * order, the releases; then the waiting rows, whose flags are decided under those locks. */
  private async writeKeys(c: Tx): Promise<void> {
    const byNs = groupBy(this.keys, (k) => k.namespaceId);
    const { entered, left } = netWaiting(this.waitingOps);
    const waitingKeys = [
      ...keysToLock(entered),
      ...left.flatMap((t) => (t.concurrency_key ? [{ namespace_id: t.namespace_id, concurrency_key: t.concurrency_key }] : [])),
    ];
    for (const k of waitingKeys) if (!byNs.has(k.namespace_id)) byNs.set(k.namespace_id, []);
    for (const ns of [...byNs.keys()].sort()) {
      const released = byNs.get(ns)!;
      const mine = waitingKeys.filter((k) => k.namespace_id === ns);
      const lock = mine.length > 0 ? lockKeysSql([...mine, ...released.map((k) => ({ namespace_id: ns, concurrency_key: k.key }))]) : null;
      if (lock) await write(c, ...lock);
      if (released.length > 0) await releaseKeys(c, ns, released);
    }
    await leaveWaiting(c, left);
    const ids = entered.map((t) => t.id);
    await enterWaiting(c, ids, keysToLock(entered).length ? [] : null);
  }

  /** The hot rows: queues, applications, stream heads. */
  private async writeCounters(c: Tx): Promise<void> {
    const q = [...this.queueActive].filter(([, d]) => d !== 0).sort((a, b) => (a[0] < b[0] ? -1 : 1));
    if (q.length > 0) await addQueueActive(c, q);
    const apps = new Set([...this.appActive.keys(), ...this.appUnfinished.keys()]);
    for (const id of [...apps].sort()) {
      const da = this.appActive.get(id) ?? 0;
      const du = this.appUnfinished.get(id) ?? 0;
      if (da !== 0 || du !== 0) await addApplicationCounts(c, id, da, du);
    }
    if (this.events.length) await appendResultEvents(c, this.events);
  }
}

function add(m: Map<string, number>, k: string, d: number): void {
  m.set(k, (m.get(k) ?? 0) + d);
}

/** Runs `fn` in a transaction with a fresh ledger (on each retry), flushed before the commit;
 * returns `fn`'s value with the ledger of the run that committed. */
export async function withLedgerTx<T>(
  pool: Pool,
  path: TxPath,
  advance: StepAdvancer,
  fn: (tx: Tx, ledger: PermitLedger) => Promise<T>,
): Promise<{ value: T; ledger: PermitLedger }> {
  return withTransaction(pool, path, (c) => withLedger(c, advance, (ledger) => fn(c, ledger)));
}

/** Runs `fn` with a fresh ledger inside the caller's transaction and flushes it after. */
export async function withLedger<T>(c: Tx, advance: StepAdvancer, fn: (ledger: PermitLedger) => Promise<T>): Promise<{ value: T; ledger: PermitLedger }> {
  const ledger = new PermitLedger();
  const value = await fn(ledger);
  await ledger.flush(c, advance);
  return { value, ledger };
}

export type EventType = 'task.succeeded' | 'task.failed' | 'task.cancelled' | 'task.deadline_exceeded' | 'task.needs_review';

export interface PendingEvent {
  namespaceId: string;
  type: EventType;
  taskId: string;
  queueId: string;
  result: unknown;
}

export const OUTCOME_EVENT: Record<string, EventType> = {
  succeeded: 'task.succeeded',
  failed: 'task.failed',
  cancelled: 'task.cancelled',
  deadline_exceeded: 'task.deadline_exceeded',
  unknown: 'task.needs_review',
};

/** Queued: the statements travel with the transaction's next round trip, usually its COMMIT. */
export async function appendResultEvents(c: Tx, events: PendingEvent[]): Promise<void> {
  const byNs = groupBy(events, (e) => e.namespaceId);
  for (const ns of [...byNs.keys()].sort()) {
    const list = byNs.get(ns)!;
    const k = list.length;
    await allocateSequences(c, ns, k);
    const rows = list.map((e, i) => ({ fromHead: k - 1 - i, type: e.type, taskId: e.taskId, queueId: e.queueId, result: JSON.stringify(e.result) }));
    await insertResultEvents(c, ns, rows);
  }
}
