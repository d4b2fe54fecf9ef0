// One waiting_tasks row per WAITING task, in claim order, written under the task row's lock.
// `claimable` marks the rows the candidate read scans (docs/design.md "Waiting heads"): unkeyed
// rows, rows with not_before, and each key group's first row without not_before — exact because
// every writer of a keyed row holds the key's resource_keys row lock first.
import type { Tx } from './pool.js';
import { write } from './pipeline.js';
import { placeholders, placeholderRows } from './placeholders.js';

export interface WaitingKey {
  queue_id: string;
  priority: number;
  seq: string | bigint;
}

export interface WaitingRow extends WaitingKey {
  namespace_id: string;
  concurrency_key: Buffer | null;
  handler: string;
  handler_version: string;
}

const COPIED =
  't.queue_id, t.priority, t.seq, t.id, t.namespace_id, t.application_id, t.handler, t.handler_version, t.concurrency_key, t.not_before, t.deadline_at, t.created_at';

/** 1 unless an earlier not_before-NULL row of the group waits. FORCE INDEX: on the queue's
 * primary key an empty group reads every earlier row of the queue. */
const CLAIMABLE = `t.concurrency_key IS NULL OR t.not_before IS NOT NULL OR NOT EXISTS (
     SELECT 1 FROM waiting_tasks e FORCE INDEX (ix_waiting_key)
      WHERE e.namespace_id = t.namespace_id AND e.concurrency_key = t.concurrency_key AND e.queue_id = t.queue_id
        AND e.handler = t.handler AND e.handler_version = t.handler_version AND e.not_before IS NULL
        AND (e.priority > t.priority OR (e.priority = t.priority AND e.seq < t.seq)))`;

/** Waiting rows for tasks that just became WAITING. The ids in `behind` get 0; `behind` null
 * flags every row 1 without reading waiting_tasks (safe: over-flagging). The caller holds the key
 * rows of keyed tasks without not_before. */
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

/** The tasks of one submit batch behind an earlier task of the batch in their group: the
 * INSERT … SELECT reads the table as before the statement, so it cannot see them. */
export function behindInBatch(tasks: (WaitingRow & { id: string; not_before: string | null })[]): string[] {
  const first = new Map<string, { id: string; priority: number }>();
  const behind: string[] = [];
  for (const t of tasks) {
    if (!t.concurrency_key || t.not_before !== null) continue;
    const group = [t.namespace_id, t.concurrency_key.toString('hex'), t.queue_id, t.handler, t.handler_version].join('\n');
    const head = first.get(group);
    if (!head) first.set(group, t);
    else if (t.priority > head.priority) {
      behind.push(head.id);
      first.set(group, t);
    } else behind.push(t.id);
  }
  return behind;
}

/** Deletes the rows, then flags the next head of each keyed row's group. */
export async function leaveWaiting(c: Tx, rows: WaitingRow[]): Promise<void> {
  if (rows.length === 0) return;
  await write(c, ...leaveWaitingSql(rows));
  const heads = flagHeadsSql(rows);
  if (heads) await write(c, ...heads);
}

/** One row is named by its three columns: MariaDB plans a one-element row list as a full scan.
 * FORCE INDEX (PRIMARY): a range on ix_waiting_claimable would lock every claimable row of the
 * queue and make claim rounds wait for each other. */
export function leaveWaitingSql(rows: WaitingKey[]): [string, unknown[]] {
  const values = rows.flatMap((r) => [r.queue_id, r.priority, String(r.seq)]);
  if (rows.length === 1) return ['DELETE w FROM waiting_tasks w FORCE INDEX (PRIMARY) WHERE w.queue_id = ? AND w.priority = ? AND w.seq = ?', values];
  return [
    `DELETE w FROM waiting_tasks w FORCE INDEX (PRIMARY) WHERE (w.queue_id, w.priority, w.seq) IN (${placeholderRows(rows.length, '(?, ?, ?)')})`,
    values,
  ];
}

/** Flags each keyed group's head, or null when no row is keyed. FORCE INDEX: on the queue's
 * primary key the locking read walks other keys' rows and deadlocks with their claims. */
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

/** X-locks each key's resource_keys row in (namespace, key bytes) order, the order every
 * transaction takes key rows in, creating missing rows. Null for no keys. */
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

/** Keyed rows without not_before: the ones whose key lock entering or leaving WAITING needs. */
export function keysToLock(
  rows: { namespace_id: string; concurrency_key: Buffer | null; not_before: string | null }[],
): { namespace_id: string; concurrency_key: Buffer }[] {
  return rows.flatMap((r) => (r.concurrency_key && r.not_before === null ? [{ namespace_id: r.namespace_id, concurrency_key: r.concurrency_key }] : []));
}
