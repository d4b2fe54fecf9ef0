// The statements of a PermitLedger flush (server/dispatch/ledger.ts), in its lock order: resource
// keys (hand-off swaps, then releases, per namespace in key order), queues (by id), applications
// (by id); the stream head is db/result-events.ts. Every statement is one per table for the whole
// transaction, and the writes whose row count nobody reads are queued on the transaction
// (db/pipeline.ts) to travel with the next statement.
import type { Tx } from './pool.js';
import { checkedAssignment } from './conditional-commit.js';
import { write } from './pipeline.js';
import { queueDispatches, TOKEN_MAX } from './claim-sql.js';
import { placeholders } from './placeholders.js';

/** swapKeyHolders(namespace, [key, released attempt, successor attempt]): each key goes from the
 * released attempt to its successor with highest_token + 1 — only where the released attempt is
 * still the holder and the key is not exhausted (the shape of a claim's grant). Queued: the
 * caller holds the key rows' locks (lockKeyRowsSql) and knows from them which swaps apply and the
 * tokens they give. */
export async function swapKeyHolders(c: Tx, namespaceId: string, swaps: { key: Buffer; from: string; to: string }[]): Promise<void> {
  await write(
    c,
    `UPDATE resource_keys SET holder_attempt_id = CASE holder_attempt_id ${swaps.map(() => 'WHEN ? THEN ?').join(' ')} END,
            highest_token = highest_token + 1, version = version + 1, updated_at = UTC_TIMESTAMP(3)
      WHERE namespace_id = ? AND concurrency_key IN (${placeholders(swaps.length)})
        AND holder_attempt_id IN (${placeholders(swaps.length)}) AND highest_token < ${TOKEN_MAX}`,
    [...swaps.flatMap((s) => [s.from, s.to]), namespaceId, ...swaps.map((s) => s.key), ...swaps.map((s) => s.from)],
  );
}

/** A key row as a hand-off decides on it (locked). */
export interface LockedKeyRow {
  concurrency_key: Buffer;
  holder_attempt_id: string | null;
  highest_token: string;
}

/** lockKeyRowsSql(namespace, keys): the key rows' holder and highest token, locked FOR UPDATE
 * (primary key, walked in key order: the order claims lock keys in). Under that lock nothing
 * else moves a row's holder or token, so a swap's outcome and token are known from it before the
 * swap is sent (it replaced a read after the swap: one round trip less per hand-off). */
export function lockKeyRowsSql(namespaceId: string, keys: Buffer[]): [string, unknown[]] {
  return [
    `SELECT concurrency_key, holder_attempt_id, highest_token FROM resource_keys
      WHERE namespace_id = ? AND concurrency_key IN (${placeholders(keys.length)}) FOR UPDATE`,
    [namespaceId, ...keys],
  ];
}

/** releaseKeys(namespace, [key, attempt]): clears the holder where it is still that attempt — a
 * duplicate or late release never frees a later attempt's permit (an attempt holds one key, so
 * "key in the list and holder in the list" is exact). The primary-key range is walked in key
 * order, the order claims lock keys in. Queued. */
export async function releaseKeys(c: Tx, namespaceId: string, keys: { key: Buffer; attemptId: string }[]): Promise<void> {
  await write(
    c,
    `UPDATE resource_keys SET holder_attempt_id = NULL, version = version + 1, updated_at = UTC_TIMESTAMP(3)
      WHERE namespace_id = ? AND concurrency_key IN (${placeholders(keys.length)}) AND holder_attempt_id IN (${placeholders(keys.length)})`,
    [namespaceId, ...keys.map((k) => k.key), ...keys.map((k) => k.attemptId)],
  );
}

/** addQueueActive([queue id, delta] by id, checked): one UPDATE of the queues' active counts,
 * queued (it travels with the transaction's next round trip, usually its COMMIT). `checked` queues
 * (a hand-off or refill took their permits back) must still dispatch — not paused, not retired,
 * within max_active_attempts — as a claim's queuePermits checks them: a checked assignment
 * (db/conditional-commit.ts), refused where one does not, so the text stops there and the
 * transaction rolls back before its COMMIT runs (HandoffRefused). The check used to be the
 * statement's row count, read in a round trip of its own; failing the statement lets it, the
 * application's check and the COMMIT go as one text (docs/benchmarks.md, "The hot-key turnover"). */
export async function addQueueActive(c: Tx, deltas: [string, number][], checked: string[]): Promise<void> {
  const delta = `CASE id ${deltas.map(() => 'WHEN ? THEN ?').join(' ')} END`;
  const set = checked.length
    ? checkedAssignment('queues', 'active_attempts', `id NOT IN (${placeholders(checked.length)}) OR (${queueDispatches(delta)})`, `active_attempts + ${delta}`)
    : `active_attempts = active_attempts + ${delta}`;
  const args = [...(checked.length ? [...checked, ...deltas.flat()] : []), ...deltas.flat(), ...deltas.map(([id]) => id)];
  await write(c, `UPDATE queues SET ${set} WHERE id IN (${placeholders(deltas.length)})`, args);
}

/** addApplicationCountsWithin(application, active delta, unfinished delta): the same change, only
 * when the active count stays within max_active_attempts (a hand-off or refill took permits back:
 * a claim's applicationPermits check). Queued; refused like addQueueActive's checked queues. */
export async function addApplicationCountsWithin(c: Tx, applicationId: string, active: number, unfinished: number): Promise<void> {
  await write(
    c,
    `UPDATE applications SET unfinished_tasks = unfinished_tasks + ?,
            ${checkedAssignment('applications', 'active_attempts', 'active_attempts + ? <= max_active_attempts', 'active_attempts + ?')} WHERE id = ?`,
    [unfinished, active, active, applicationId],
  );
}

/** addApplicationCounts(application, active delta, unfinished delta). Queued. */
export async function addApplicationCounts(c: Tx, applicationId: string, active: number, unfinished: number): Promise<void> {
  await write(c, 'UPDATE applications SET active_attempts = active_attempts + ?, unfinished_tasks = unfinished_tasks + ? WHERE id = ?', [
    active,
    unfinished,
    applicationId,
  ]);
}
