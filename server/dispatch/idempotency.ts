// The idempotency mechanics of receipt-bearing commands and task creation.
import crypto from 'node:crypto';
import { OrbitError } from '@orbit/protocol/errors';
import { canonicalJson } from '@orbit/protocol/validation';
import { markBroken, releaseConnection, transactionOn, type Conn, type Pool, type TxPath, type Tx } from '../db/pool.js';
import { getNamedLock, releaseNamedLock } from '../mariadb/named-locks.js';
import type { ReceiptRow } from '../db/receipts.js';

/** The SHA-256 of `v`'s canonical JSON: a command's or a result frame's fingerprint. */
export const fingerprintOf = (v: unknown): string => crypto.createHash('sha256').update(canonicalJson(v)).digest('hex');

export function commandFingerprint(operation: string, targetId: string, normalized: unknown): string {
  return fingerprintOf({ operation, target: targetId, body: normalized });
}

/** The stored reply of a committed receipt, or 409 when the key was used for another command. */
export function replayReceipt(row: ReceiptRow, operation: string, targetId: string, fingerprint: string): { status: 200; data: Record<string, unknown> } {
  if (row.operation !== operation || row.target_id !== targetId || row.fingerprint !== fingerprint) {
    throw new OrbitError('IDEMPOTENCY_CONFLICT', 'Idempotency-Key was already used for a different command');
  }
  const data = JSON.parse(row.response_data ?? '{}') as Record<string, unknown>;
  return { status: 200, data: { ...data, deduplicated: true } };
}

export const ALONE = Symbol('alone');

/** Runs idempotent commands batched; an item marked ALONE, or every item when `fallsBack` accepts
 * the batch's failure, then runs alone, in order. */
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

const ALONE_ROUNDS = 3;

export interface AloneCommand<T> {
  path: TxPath;
  /** Replies with the receipt the key's previous holder committed, if any. */
  replayed?: (conn: Conn) => Promise<T | undefined>;
  tx: (tx: Tx) => Promise<T>;
  /** True when a batch on another node inserted the key's receipt meanwhile. */
  taken: (err: unknown) => boolean;
  committed?: (seconds: number) => void;
}

const KEY_LOCK_WAIT_SECONDS = 20;

/** One command in its own transaction under a named lock on (namespace, key) for the whole command,
 * taken before any row lock: without it, waiters on the receipt row of a transaction that rolls back
 * deadlock with each other. The receipt's primary key, not this lock, makes a command run once (under
 * Galera it is node-local). */
export async function runAlone<T>(pool: Pool, ns: string, key: string, cmd: AloneCommand<T>): Promise<T> {
  const name = 'orbit:ik:' + crypto.createHash('sha256').update(`${ns}\n${key}`).digest('hex').slice(0, 52);
  const conn = await pool.getConnection();
  try {
    if (!(await getNamedLock(conn, name, KEY_LOCK_WAIT_SECONDS))) {
      throw new OrbitError('UNAVAILABLE', 'another request with this Idempotency-Key is still running; retry with the same key');
    }
    try {
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
    } finally {
      // A lock that cannot be released must not go back to the pool.
      await releaseNamedLock(conn, name).catch(() => markBroken(conn));
    }
  } finally {
    releaseConnection(conn);
  }
}
