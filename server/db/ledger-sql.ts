// The statements of a PermitLedger flush (server/dispatch/ledger.ts), in its lock order: resource
// keys (per namespace in key order), queues (by id), applications (by id); the stream head is
// db/result-events.ts. One statement per table for the whole transaction, queued on the
// transaction (db/pipeline.ts) to travel with its next statement, usually the COMMIT.
import type { Tx } from './pool.js';
import { write } from './pipeline.js';
import { caseWhen, placeholders } from './placeholders.js';

/** releaseKeys(namespace, [key, attempt]): clears the holder where it is still that attempt — a
 * duplicate or late release never frees a later attempt's permit (an attempt holds one key, so
 * "key in the list and holder in the list" is exact). The primary-key range is walked in key
 * order, the order claims lock keys in. */
export async function releaseKeys(c: Tx, namespaceId: string, keys: { key: Buffer; attemptId: string }[]): Promise<void> {
  await write(
    c,
    `UPDATE resource_keys SET holder_attempt_id = NULL, version = version + 1, updated_at = UTC_TIMESTAMP(3)
      WHERE namespace_id = ? AND concurrency_key IN (${placeholders(keys.length)}) AND holder_attempt_id IN (${placeholders(keys.length)})`,
    [namespaceId, ...keys.map((k) => k.key), ...keys.map((k) => k.attemptId)],
  );
}

export async function addQueueActive(c: Tx, deltas: [string, number][]): Promise<void> {
  await write(c, `UPDATE queues SET active_attempts = active_attempts + ${caseWhen('id', deltas.length)} WHERE id IN (${placeholders(deltas.length)})`, [
    ...deltas.flat(),
    ...deltas.map(([id]) => id),
  ]);
}

export async function addApplicationCounts(c: Tx, applicationId: string, active: number, unfinished: number): Promise<void> {
  await write(c, 'UPDATE applications SET active_attempts = active_attempts + ?, unfinished_tasks = unfinished_tasks + ? WHERE id = ?', [
    active,
    unfinished,
    applicationId,
  ]);
}
