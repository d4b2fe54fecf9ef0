// The claimable work (migration 000007): one waiting_tasks row per WAITING task, clustered in claim
// order (queue_id, priority DESC, seq). Written only by a transaction that holds the task row's
// lock and changes its state in the same transaction — tasks before waiting_tasks in the lock
// order (docs/design.md) — so a task is WAITING exactly when its row exists, at every commit:
//   enterWaiting(task ids)   after the task row became WAITING (submit, retry, requeue, resolve retry)
//   leaveWaiting(rows)       when it leaves WAITING (claim, hand-off, refill, cancel, deadline)
// Both are queued writes of the transaction (db/pipeline.ts Tx): they travel with the next
// statement of the transaction.
//
// Waiting heads (migration 000009, docs/design.md "Waiting heads"): a group is (namespace, key,
// queue, handler, handler version). `claimable` = 1 for an unkeyed row, a row with not_before, and
// a keyed row without not_before that is (or once was) the first of its group in claim order among
// the group's rows without not_before; the candidate read (claim-sql.ts) scans only those. Both
// writes below decide flags from a plain read of the group, which is exact only when no other
// transaction changes the group's rows meanwhile: every transaction that inserts a keyed row
// without not_before, or deletes a keyed row, holds the key's resource_keys row lock (X) before
// the statement that decides — claims and hand-offs hold it (the grant, the hand-off's lock), the
// others take it with lockKeysSql (dispatch/ledger.ts, tasks.ts insertTasks).
import type { Tx } from './pool.js';
import { write } from './pipeline.js';
import { placeholders, placeholderRows } from './placeholders.js';

/** The primary key of a task's waiting row: the task's queue, priority and seq. */
export interface WaitingKey {
  queue_id: string;
  priority: number;
  seq: string | bigint;
}

/** A waiting row with its group (the columns of the task row it copies). */
export interface WaitingRow extends WaitingKey {
  namespace_id: string;
  concurrency_key: Buffer | null;
  handler: string;
  handler_version: string;
}

/** The columns of a waiting row copied from its task row `t`. */
const COPIED =
  't.queue_id, t.priority, t.seq, t.id, t.namespace_id, t.application_id, t.handler, t.handler_version, t.concurrency_key, t.not_before, t.deadline_at, t.created_at';

/** The flag of a new row from task row `t`: 1 unless an earlier not_before-NULL row of its group
 * waits (one ix_waiting_key dive; OR stops at the first true term, so unkeyed rows and rows with
 * not_before read nothing). FORCE INDEX: left to itself the optimizer took the queue's primary
 * key (a range on queue and priority), which reads every earlier waiting row of the queue when the
 * group has none — keys-1000 measured 371 Handler_read_next per task against 3.8 before 000009;
 * on the key's index a new key reads nothing, a busy one stops at its first row. A key with a
 * long backlog of other groups only (a new handler version on a hot key) reads that backlog.
 * The INSERT … SELECT reads waiting_tasks before inserting any of its rows: rows of one group in
 * one statement are told apart by enterWaiting's `behind` (behindInBatch). */
const CLAIMABLE = `t.concurrency_key IS NULL OR t.not_before IS NOT NULL OR NOT EXISTS (
     SELECT 1 FROM waiting_tasks e FORCE INDEX (ix_waiting_key)
      WHERE e.namespace_id = t.namespace_id AND e.concurrency_key = t.concurrency_key AND e.queue_id = t.queue_id
        AND e.handler = t.handler AND e.handler_version = t.handler_version AND e.not_before IS NULL
        AND (e.priority > t.priority OR (e.priority = t.priority AND e.seq < t.seq)))`;

/** enterWaiting(task ids, behind): the waiting rows of tasks that just became WAITING, copied from
 * their rows (read by primary key; the caller holds their locks), flagged (CLAIMABLE; 0 for the
 * ids in `behind`: behindInBatch). `behind` null: no row is keyed without not_before (unkeyed
 * submits, a result's retries), all are flagged 1 without reading waiting_tasks — the statement
 * of before 000009, which MariaDB runs without buffering the SELECT (a SELECT that reads the
 * INSERT's own table goes through a temporary table first); null is also safe for any row
 * (over-flagging). One INSERT … SELECT for any number. The caller holds the key row of every keyed task without not_before
 * (see the top of this file); a result's retry has a not_before (its backoff) and needs none. */
export async function enterWaiting(c: Tx, taskIds: string[], behind: string[] | null = null): Promise<void> {
  if (taskIds.length === 0) return;
  const b = behind ?? [];
  const flag = behind === null ? '1' : b.length ? `IF(t.id IN (${placeholders(b.length)}), 0, ${CLAIMABLE})` : CLAIMABLE;
  await write(
    c,
    `INSERT INTO waiting_tasks (queue_id, priority, seq, task_id, namespace_id, application_id, handler, handler_version, concurrency_key,
        not_before, deadline_at, created_at, claimable)
     SELECT ${COPIED}, ${flag}
       FROM tasks t WHERE t.id IN (${placeholders(taskIds.length)})`,
    [...b, ...taskIds],
  );
}

/** The tasks of one submit batch (in insert order: their seq grows with it) that come after an
 * earlier task of the batch in their group's claim order — keyed, without not_before, behind a
 * task of the same (namespace, key, queue, handler, version) with a higher priority, or the same
 * priority and inserted before. enterWaiting gives them 0 outright: its NOT EXISTS reads the
 * table as it was before the statement, so it would flag every row of a group new in the batch
 * (hot-keys-10 submits 100 tasks on 10 keys per batch: 10 flagged rows per key, read by every
 * claim round until they are claimed). */
export function behindInBatch(
  tasks: {
    id: string;
    namespaceId: string;
    concurrencyKey: Buffer | null;
    queueId: string;
    handler: string;
    handlerVersion: string;
    priority: number;
    notBefore: string | null;
  }[],
): string[] {
  const first = new Map<string, { id: string; priority: number }>();
  const behind: string[] = [];
  for (const t of tasks) {
    if (!t.concurrencyKey || t.notBefore !== null) continue;
    const group = [t.namespaceId, t.concurrencyKey.toString('hex'), t.queueId, t.handler, t.handlerVersion].join('\n');
    const head = first.get(group);
    if (!head) first.set(group, t);
    else if (t.priority > head.priority) {
      behind.push(head.id);
      first.set(group, t);
    } else behind.push(t.id);
  }
  return behind;
}

/** leaveWaiting(rows): deletes the waiting rows of tasks that leave WAITING in this transaction
 * (leaveWaitingSql), then flags the first remaining not_before-NULL row of each keyed row's group
 * (flagHeadsSql). The caller holds the key rows (see the top of this file). Both queued. */
export async function leaveWaiting(c: Tx, rows: WaitingRow[]): Promise<void> {
  if (rows.length === 0) return;
  await write(c, ...leaveWaitingSql(rows));
  const heads = flagHeadsSql(rows);
  if (heads) await write(c, ...heads);
}

/** The DELETE of waiting rows by primary key. One row is named by its three columns, not by a
 * one-element row list: MariaDB 10.11 plans a single-table DELETE whose WHERE is `(a, b, c) IN
 * ((x, y, z))` (rewritten to a row equality) as a full scan — measured in the bench's profile:
 * every hand-off and lone refill read the whole waiting table, 50–60 rows examined per task and
 * 7 % of the database's CPU on `unkeyed-batch` (docs/benchmarks.md, "Where mariadbd's CPU
 * goes"). Two rows and more are a `range` read of the primary key (test/statement-plans.test.ts).
 * FORCE INDEX (PRIMARY), in the multi-table form (the one both MySQL and MariaDB give index hints
 * in a DELETE): on a small table MariaDB 10.11 planned the one-row DELETE as a range on
 * ix_waiting_claimable's `queue_id` prefix (migration 000009), which locks every claimable row of
 * the queue it passes — a claim round then waited for another round's deleted row
 * (test/dispatch-overlapping-rounds.test.ts hung on it). */
export function leaveWaitingSql(rows: WaitingKey[]): [string, unknown[]] {
  const values = rows.flatMap((r) => [r.queue_id, r.priority, String(r.seq)]);
  if (rows.length === 1) return ['DELETE w FROM waiting_tasks w FORCE INDEX (PRIMARY) WHERE w.queue_id = ? AND w.priority = ? AND w.seq = ?', values];
  return [
    `DELETE w FROM waiting_tasks w FORCE INDEX (PRIMARY) WHERE (w.queue_id, w.priority, w.seq) IN (${placeholderRows(rows.length, '(?, ?, ?)')})`,
    values,
  ];
}

/** flagHeadsSql(deleted rows) → the UPDATE that flags the first not_before-NULL row of each keyed
 * row's group (one ix_waiting_key dive with LIMIT 1 per group, UNION ALL in a derived table), or
 * null when no row is keyed. A group whose deleted row was not its head gets its head flagged
 * again (no change). FORCE INDEX: left to itself the optimizer walked the queue's primary key
 * (same order, `queue_id` const) through the rows of other keys — more rows, and, since this read
 * locks what it reads inside an UPDATE, row-lock waits and deadlocks with the claims and hand-offs
 * of those keys (measured on hot-keys-10: 0.014 rollbacks per task at 1 000 tasks); on the key's
 * index it reads only rows whose writers hold the same key row. The derived table is materialized (LIMIT, UNION), so MySQL does not refuse
 * the self-reference (error 1093 is for merged derived tables). */
export function flagHeadsSql(rows: WaitingRow[]): [string, unknown[]] | null {
  const groups = new Map<string, WaitingRow>();
  for (const r of rows) {
    if (!r.concurrency_key) continue;
    const id = [r.namespace_id, r.concurrency_key.toString('hex'), r.queue_id, r.handler, r.handler_version].join('\n');
    groups.set(id, r);
  }
  if (groups.size === 0) return null;
  const parts = [...groups.values()].map(
    () => `(SELECT queue_id, priority, seq FROM waiting_tasks FORCE INDEX (ix_waiting_key)
             WHERE namespace_id = ? AND concurrency_key = ? AND queue_id = ? AND handler = ? AND handler_version = ? AND not_before IS NULL
             ORDER BY priority DESC, seq LIMIT 1)`,
  );
  return [
    `UPDATE waiting_tasks w JOIN (${parts.join(' UNION ALL ')}) h ON w.queue_id = h.queue_id AND w.priority = h.priority AND w.seq = h.seq
        SET w.claimable = 1 WHERE w.claimable = 0`,
    [...groups.values()].flatMap((g) => [g.namespace_id, g.concurrency_key, g.queue_id, g.handler, g.handler_version]),
  ];
}

/** lockKeysSql(keys) → one INSERT … ON DUPLICATE KEY UPDATE that takes the exclusive lock of each
 * key's resource_keys row, creating a missing one as a claim's first use would find it (no holder,
 * highest_token 0, version 0; a key row is never deleted), in (namespace, key bytes) order — the
 * order every transaction takes key rows in. The no-op assignment changes nothing; the duplicate
 * row's X lock is what it is for. Null for no keys. */
export function lockKeysSql(keys: { namespace_id: string; concurrency_key: Buffer }[]): [string, unknown[]] | null {
  const unique = new Map<string, { namespace_id: string; concurrency_key: Buffer }>();
  for (const k of keys) unique.set(`${k.namespace_id}/${k.concurrency_key.toString('hex')}`, k);
  const sorted = [...unique.values()].sort((a, b) =>
    a.namespace_id !== b.namespace_id ? (a.namespace_id < b.namespace_id ? -1 : 1) : Buffer.compare(a.concurrency_key, b.concurrency_key),
  );
  if (sorted.length === 0) return null;
  return [
    `INSERT INTO resource_keys (namespace_id, concurrency_key, highest_token, holder_attempt_id, version, created_at, updated_at)
     VALUES ${placeholderRows(sorted.length, '(?, ?, 0, NULL, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))')}
     ON DUPLICATE KEY UPDATE namespace_id = namespace_id`,
    sorted.flatMap((k) => [k.namespace_id, k.concurrency_key]),
  ];
}

/** The key rows whose lock entering or leaving `rows` needs (see the top of this file): keyed rows
 * without not_before (a row with not_before is always flagged and is never a group's head). */
export function keysToLock(
  rows: { namespace_id: string; concurrency_key: Buffer | null; not_before: string | null }[],
): { namespace_id: string; concurrency_key: Buffer }[] {
  return rows.flatMap((r) => (r.concurrency_key && r.not_before === null ? [{ namespace_id: r.namespace_id, concurrency_key: r.concurrency_key }] : []));
}
