// The idempotency mechanics shared by every receipt-bearing command (server/http/command.ts) and
// the task-creation path (submit.ts): the fingerprint of a normalized command, the replay of a
// stored receipt, and the named lock that serializes commands with the same key.
import crypto from 'node:crypto';
import { OrbitError } from '@orbit/protocol/errors';
import { canonicalJson } from '@orbit/protocol/validation';
import { markBroken, releaseConnection, type Conn, type Pool } from '../db/pool.js';
import { getNamedLock, releaseNamedLock } from '../db/named-locks.js';
import type { ReceiptRow } from '../db/receipts.js';

/** SHA-256 of operation + target + normalized body, canonically serialized. */
export function commandFingerprint(operation: string, targetId: string, normalized: unknown): string {
  return crypto
    .createHash('sha256')
    .update(canonicalJson({ operation, target: targetId, body: normalized }))
    .digest('hex');
}

/** The stored reply of a committed receipt (200, `deduplicated: true`), or 409 when the key was
 * used for a different command. */
export function replayReceipt(row: ReceiptRow, operation: string, targetId: string, fingerprint: string): { status: 200; data: Record<string, unknown> } {
  if (row.operation !== operation || row.target_id !== targetId || row.fingerprint !== fingerprint) {
    throw new OrbitError('IDEMPOTENCY_CONFLICT', 'Idempotency-Key was already used for a different command');
  }
  const data = JSON.parse(row.response_data ?? '{}') as Record<string, unknown>;
  return { status: 200, data: { ...data, deduplicated: true } };
}

/** Seconds a command waits for another command holding the same Idempotency-Key. */
const KEY_LOCK_WAIT_SECONDS = 20;

/**
 * Holds a named lock on (namespace, Idempotency-Key) for the whole command, on the connection
 * the command's transaction then runs on. Commands with the same key run one after the other on
 * every node (the lock lives in the database): a waiter wakes up after the winner committed and
 * replays its receipt, or after it rolled back and tries itself. Without it, waiters blocked on
 * the receipt row of a transaction that rolls back (quota, 404, ...) deadlock with each other.
 * The lock is taken before any row lock, and a connection holds at most one, so it cannot take
 * part in a deadlock; a dead connection releases it. It is not what makes a key's command run
 * once — the receipt's primary key is (a same-key command past the lock fails with 1062 here, or a
 * certification failure on another Galera node, and replays the receipt) — so its being node-local
 * under Galera costs retries, not correctness (docs/design.md, "Galera").
 */
export async function withKeyLock<T>(pool: Pool, ns: string, key: string, fn: (c: Conn) => Promise<T>): Promise<T> {
  const name = 'orbit:ik:' + crypto.createHash('sha256').update(`${ns}\n${key}`).digest('hex').slice(0, 52);
  const conn = await pool.getConnection();
  try {
    if (!(await getNamedLock(conn, name, KEY_LOCK_WAIT_SECONDS))) {
      throw new OrbitError('UNAVAILABLE', 'another request with this Idempotency-Key is still running; retry with the same key');
    }
    try {
      return await fn(conn);
    } finally {
      // If the lock cannot be released, the connection must not go back to the pool holding it;
      // destroying it releases the lock on the server.
      await releaseNamedLock(conn, name).catch(() => markBroken(conn));
    }
  } finally {
    releaseConnection(conn);
  }
}
