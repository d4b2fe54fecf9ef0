// SQL operations on idempotency receipts.
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool, Conn, Tx } from './pool.js';
import { chunkRows } from './packet-budget.js';
import { write } from './pipeline.js';
import { placeholderRows, placeholders } from './placeholders.js';
import { JsonText } from './sql-format.js';

export interface ReceiptRow extends RowDataPacket {
  operation: string;
  target_id: string;
  fingerprint: string;
  http_status: number;
  response_data: string | null;
}

/** A committed receipt or null. */
export async function getReceipt(db: Pool | Conn, namespaceId: string, key: string): Promise<ReceiptRow | null> {
  const [rows] = await db.execute<ReceiptRow[]>(
    'SELECT operation, target_id, fingerprint, http_status, response_data FROM receipts WHERE namespace_id = ? AND idempotency_key = ?',
    [namespaceId, key],
  );
  return rows[0] ?? null;
}

/** Inserts the placeholder first in the command's transaction, so a concurrent command with the
 * same key waits on this row's lock and then gets ER_DUP_ENTRY. */
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

export async function completeReceipt(c: Conn, namespaceId: string, key: string, status: number, data: unknown, resourceId: string | null): Promise<void> {
  const sql = 'UPDATE receipts SET http_status = ?, response_data = ?, resource_id = ? WHERE namespace_id = ? AND idempotency_key = ?';
  await c.execute(sql, [status, JSON.stringify(data), resourceId, namespaceId, key]);
}

export interface ReceiptKeyRow extends ReceiptRow {
  namespace_id: string;
  idempotency_key: string;
}

/** The statement that reads the committed receipts among `keys` for a whole submit batch. */
export function receiptsRead(keys: [string, string][]): [string, string[]] {
  return [
    `SELECT namespace_id, idempotency_key, operation, target_id, fingerprint, http_status, response_data FROM receipts
      WHERE (namespace_id, idempotency_key) IN (${placeholderRows(keys.length, '(?, ?)')})`,
    keys.flat(),
  ];
}

/** A complete receipt, by column; `response_data` is the frozen reply, the same JSON text the
 * HTTP reply sends. */
export type NewReceipt = Pick<ReceiptKeyRow, 'namespace_id' | 'idempotency_key' | 'operation' | 'target_id' | 'fingerprint' | 'http_status'> & {
  response_data: JsonText;
  resource_id: string | null;
  credential_id: string;
  created_at: string;
};

// prettier-ignore
const INSERTED = [
  'namespace_id', 'idempotency_key', 'operation', 'target_id', 'fingerprint', 'http_status', 'response_data', 'resource_id', 'credential_id', 'created_at',
] as const satisfies readonly (keyof NewReceipt)[];

/** Complete receipts of a batch, queued, chunked to the statement budget. A key that exists, or
 * is in flight in another transaction (waited for), fails the statement with ER_DUP_ENTRY, and
 * the caller falls back to the per-item path. */
export async function insertReceipts(c: Tx, rows: NewReceipt[]): Promise<void> {
  const values = rows.map((r) => INSERTED.map((n) => r[n]));
  for (const chunk of chunkRows(c, values, (v) => v)) {
    await write(c, `INSERT INTO receipts (${INSERTED.join(', ')}) VALUES ${placeholderRows(chunk.length, `(${placeholders(INSERTED.length)})`)}`, chunk.flat());
  }
}
