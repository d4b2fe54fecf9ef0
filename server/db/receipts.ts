// SQL operations on idempotency receipts.
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool, Conn, Tx } from './pool.js';
import { chunkRows } from './packet-budget.js';
import { write } from './pipeline.js';
import { placeholderRows } from './placeholders.js';
import { JsonText } from './sql-format.js';

export interface ReceiptRow extends RowDataPacket {
  operation: string;
  target_id: string;
  fingerprint: string;
  http_status: number;
  response_data: string | null;
}

/** getReceipt(namespace_id, idempotency_key) → committed receipt or null (a fresh autocommit read). */
export async function getReceipt(db: Pool | Conn, namespaceId: string, key: string): Promise<ReceiptRow | null> {
  const [rows] = await db.execute<ReceiptRow[]>(
    'SELECT operation, target_id, fingerprint, http_status, response_data FROM receipts WHERE namespace_id = ? AND idempotency_key = ?',
    [namespaceId, key],
  );
  return rows[0] ?? null;
}

/** claimReceipt(namespace_id, key, operation, target_id, fingerprint, credential_id): inserts the
 * placeholder first in the command's transaction, so a concurrent command with the same key waits
 * on this row's lock and then sees ER_DUP_ENTRY. */
export async function claimReceipt(
  c: Conn,
  r: { namespaceId: string; key: string; operation: string; targetId: string; fingerprint: string; credentialId: string },
): Promise<void> {
  await c.execute(
    `INSERT INTO receipts (namespace_id, idempotency_key, operation, target_id, fingerprint, http_status, credential_id, created_at)
     VALUES (?, ?, ?, ?, ?, 0, ?, UTC_TIMESTAMP(3))`,
    [r.namespaceId, r.key, r.operation, r.targetId, r.fingerprint, r.credentialId],
  );
}

/** completeReceipt(namespace_id, key, status, data JSON, resource_id). */
export async function completeReceipt(c: Conn, namespaceId: string, key: string, status: number, data: unknown, resourceId: string | null): Promise<void> {
  await c.execute('UPDATE receipts SET http_status = ?, response_data = ?, resource_id = ? WHERE namespace_id = ? AND idempotency_key = ?', [
    status,
    JSON.stringify(data),
    resourceId,
    namespaceId,
    key,
  ]);
}

export interface ReceiptKeyRow extends ReceiptRow {
  namespace_id: string;
  idempotency_key: string;
}

/** receiptsRead(keys: [namespace_id, idempotency_key][]) → the statement that reads the committed
 * receipts among them (ReceiptKeyRow), one for a whole submit batch (replays are answered from
 * these without a fallback); sent by the submit in the round trip of its queues read (queryAll). */
export function receiptsRead(keys: [string, string][]): [string, string[]] {
  return [
    `SELECT namespace_id, idempotency_key, operation, target_id, fingerprint, http_status, response_data FROM receipts
      WHERE (namespace_id, idempotency_key) IN (${placeholderRows(keys.length, '(?, ?)')})`,
    keys.flat(),
  ];
}

export interface NewReceipt {
  namespaceId: string;
  key: string;
  operation: string;
  targetId: string;
  fingerprint: string;
  httpStatus: number;
  /** The frozen reply: JSON.stringify of the response data (the HTTP reply sends the same text). */
  json: string;
  resourceId: string | null;
  credentialId: string;
  createdAt: string;
}

/** insertReceipts(rows: namespace, key, operation, target, fingerprint, status, frozen data,
 * resource id, credential, created_at): complete receipts of a batch in one multi-row INSERT (one
 * per chunk when the frozen data exceed the statement budget: db/packet-budget.ts). A key that
 * exists (committed, or in flight in another transaction, which this waits for) fails the
 * statement with ER_DUP_ENTRY; the caller then falls back to the per-item path. Queued in the
 * transaction (db/pipeline.ts): the failure surfaces at the transaction's next read. */
export async function insertReceipts(c: Tx, rows: NewReceipt[]): Promise<void> {
  const values = rows.map((r) => [
    r.namespaceId,
    r.key,
    r.operation,
    r.targetId,
    r.fingerprint,
    r.httpStatus,
    new JsonText(r.json),
    r.resourceId,
    r.credentialId,
    r.createdAt,
  ]);
  for (const chunk of chunkRows(c, values, (v) => v)) {
    await write(
      c,
      `INSERT INTO receipts (namespace_id, idempotency_key, operation, target_id, fingerprint, http_status, response_data, resource_id, credential_id, created_at)
       VALUES ${placeholderRows(chunk.length, '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')}`,
      chunk.flat(),
    );
  }
}
