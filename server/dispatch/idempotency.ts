// The idempotency mechanics shared by every receipt-bearing command (server/http/command.ts) and
// the task-creation path (submit.ts): the fingerprint of a normalized command, the replay of a
// stored receipt, the named lock that serializes commands with the same key, and the one executor
// of both — a batched fast path, then each item it could not answer alone under its key lock.
import crypto from 'node:crypto';
import { OrbitError } from '@orbit/protocol/errors';
import { canonicalJson } from '@orbit/protocol/validation';
import { markBroken, releaseConnection, transactionOn, type Conn, type Pool, type TxPath, type PooledConn, type Tx } from '../db/pool.js';
import { getNamedLock, releaseNamedLock } from '../mariadb/named-locks.js';
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
export async function withKeyLock<T>(pool: Pool, ns: string, key: string, fn: (conn: PooledConn) => Promise<T>): Promise<T> {
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

/** A batch's answer for an item it could not give: the item runs alone (runAlone). */
export const ALONE = Symbol('alone');

/**
 * The one executor of idempotent commands: `batched` answers all `items` in shared work (one
 * coalesced transaction), or marks an item ALONE (a second item with its key, say); a failure it
 * throws that `fallsBack` accepts — the edge of the batch: a key another transaction is inserting,
 * a quota reached — sends every item alone. Items alone run one after the other, in order (quota
 * is then granted in arrival order); any other failure of the batch is every item's.
 */
export async function executeIdempotent<I, O>(
  items: I[],
  batched: (items: I[]) => Promise<(O | typeof ALONE)[]>,
  fallsBack: (err: unknown) => boolean,
  alone: (item: I) => Promise<O>,
): Promise<O[]> {
  let answers: (O | typeof ALONE)[];
  try {
    answers = await batched(items);
  } catch (err) {
    if (!fallsBack(err)) throw err;
    answers = items.map(() => ALONE);
  }
  const out: O[] = [];
  for (let i = 0; i < items.length; i++) {
    const a = answers[i]!;
    out.push(a === ALONE ? await alone(items[i]!) : a);
  }
  return out;
}

/** Rounds of one command alone before its key counts as unsettled (UNAVAILABLE). */
const ALONE_ROUNDS = 3;

/** One command alone: what runAlone needs to know of it. */
export interface AloneCommand<T> {
  /** The transaction's kind (db/pool.ts TxPath). */
  path: TxPath;
  /** An autocommit read on the locked connection before each round: the reply of a receipt the
   * previous holder of the key committed, if any (then the command does not run). */
  replayed?: (conn: Conn) => Promise<T | undefined>;
  /** The command's transaction. */
  tx: (tx: Tx) => Promise<T>;
  /** True when `tx` failed because the key's receipt got in without the key lock (a batch on
   * another node inserts receipts without it): the next round replays it. */
  taken: (err: unknown) => boolean;
  /** Seconds the committed transaction took (commit latency metrics). */
  committed?: (seconds: number) => void;
}

/** Runs one command in its own transaction on the connection that holds its key's named lock: a
 * concurrent command with the same key has committed (→ its receipt is replayed) or rolled back
 * before this runs. A key still taken after ALONE_ROUNDS rounds is UNAVAILABLE (retry). */
export function runAlone<T>(pool: Pool, ns: string, key: string, cmd: AloneCommand<T>): Promise<T> {
  return withKeyLock(pool, ns, key, async (conn) => {
    for (let round = 0; round < ALONE_ROUNDS; round++) {
      const prior = await cmd.replayed?.(conn);
      if (prior !== undefined) return prior;
      try {
        const started = process.hrtime.bigint();
        const out = await transactionOn(conn, cmd.path, cmd.tx);
        cmd.committed?.(Number(process.hrtime.bigint() - started) / 1e9);
        return out;
      } catch (err) {
        if (!cmd.taken(err)) throw err;
      }
    }
    throw new OrbitError('UNAVAILABLE', 'could not settle the Idempotency-Key; retry with the same key');
  });
}
