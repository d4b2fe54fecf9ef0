// Reference resource-side fencing check for resources kept in MySQL (docs/guarantees.md,
// "The fencing token (concurrency_token)"). Everything happens in ONE transaction
// that holds the fence row's lock: checking the highest token and writing separately would race,
// and a mutex inside one worker does not protect several processes.
//
// The token only rejects writes older than one this resource has already seen; it does not prove
// the caller's lease is still valid, and it replaces neither authentication nor idempotency
// (hence the operation id).
//
// Every statement that carries a value is a prepared statement (`execute`): the server binds the
// values, so they mean the same under any sql_mode of the caller's server. `query` with values
// escapes on the client with backslashes, which a server running NO_BACKSLASH_ESCAPES reads as
// text: a key with a quote would end the string literal.
import type { Pool, PoolConnection, RowDataPacket } from 'mysql2/promise';
import { UINT64_MAX } from '@orbit/protocol/limits';
import { OperationConflictError, StaleTokenError } from './errors.js';

export { OperationConflictError, StaleTokenError };

export interface FencedResourceOptions {
  /** Fence table; the operation table is `${table}_ops`. Default `orbit_fence`. */
  table?: string;
  /** Retries of the whole transaction after a deadlock or lock-wait timeout. Default 5. */
  maxRetries?: number;
}

export interface FencedWrite {
  /** Isolation scope of the key (e.g. the Orbit namespace or the resource's tenant). */
  namespace: string;
  /** The resource key (the task's concurrency_key); compared as exact bytes. */
  key: string;
  /** e.concurrencyToken: an exact bigint, never a float. */
  token: bigint;
  /** Stable id of this logical operation: a retry of the same operation must reuse it. */
  operationId: string;
  /** The effect, run on the transaction's connection; throwing rolls everything back. */
  apply: (conn: PoolConnection) => Promise<void>;
}

export interface FencedWriteResult {
  /** True when `apply` ran and committed. */
  applied: boolean;
  /** True when this operation id had already been applied (nothing ran again). */
  duplicate: boolean;
  /** The highest token the resource has seen for the key after this write. */
  highestToken: bigint;
}

export interface FencedResource {
  readonly table: string;
  readonly opsTable: string;
  /** Creates both tables if missing (idempotent). */
  ensureSchema(): Promise<void>;
  write(w: FencedWrite): Promise<FencedWriteResult>;
  /** The highest token seen for a key (0n when never written). */
  highestToken(namespace: string, key: string): Promise<bigint>;
}

const TABLE_RE = /^[A-Za-z_][A-Za-z0-9_]{0,57}$/; // leaves room for the `_ops` suffix
const RETRYABLE_SQL = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);

function checkToken(token: bigint): void {
  if (typeof token !== 'bigint') throw new TypeError('token must be a bigint (e.concurrencyToken), never a number');
  if (token < 1n || token > UINT64_MAX) throw new RangeError(`token ${token} is outside 1..2^64-1`);
}

export function createFencedResource(pool: Pool, opts: FencedResourceOptions = {}): FencedResource {
  const table = opts.table ?? 'orbit_fence';
  if (!TABLE_RE.test(table)) throw new TypeError(`table name ${JSON.stringify(table)} must match ${TABLE_RE}`);
  const opsTable = `${table}_ops`;
  const maxRetries = opts.maxRetries ?? 5;

  async function ensureSchema(): Promise<void> {
    // Keys are VARBINARY: they compare as exact UTF-8 bytes (no case folding, no normalization),
    // like Orbit's own resource keys. No foreign keys; integrity comes from the transaction.
    await pool.query(
      `CREATE TABLE IF NOT EXISTS \`${table}\` (
        namespace VARBINARY(255) NOT NULL COMMENT 'isolation scope of the key (e.g. Orbit namespace id)',
        resource_key VARBINARY(768) NOT NULL COMMENT 'resource key as exact UTF-8 bytes (the task concurrency_key)',
        highest_token BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'highest fencing token seen for the key; never decreases',
        updated_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3) COMMENT 'last time a write raised or used the token (UTC)',
        PRIMARY KEY (namespace, resource_key)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='fencing state per resource key: writes with a lower token are rejected'`,
    );
    await pool.query(
      `CREATE TABLE IF NOT EXISTS \`${opsTable}\` (
        namespace VARBINARY(255) NOT NULL COMMENT 'isolation scope of the operation id',
        operation_id VARBINARY(255) NOT NULL COMMENT 'stable id of one logical write; unique per namespace',
        resource_key VARBINARY(768) NOT NULL COMMENT 'resource key the operation wrote',
        token BIGINT UNSIGNED NOT NULL COMMENT 'fencing token the operation was applied with',
        applied_at DATETIME(3) NOT NULL DEFAULT UTC_TIMESTAMP(3) COMMENT 'when the operation committed (UTC)',
        PRIMARY KEY (namespace, operation_id)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='applied operations, for exactly-once effects under retries'`,
    );
  }

  async function attempt(w: FencedWrite): Promise<FencedWriteResult> {
    const tok = w.token.toString(); // BIGINT UNSIGNED goes to SQL as a decimal string
    const conn = await pool.getConnection();
    try {
      await conn.beginTransaction();
      try {
        // Lock the fence row, creating it on first use. INSERT … ON DUPLICATE KEY UPDATE takes the
        // row's exclusive lock directly: a SELECT … FOR UPDATE on a missing row followed by an
        // INSERT would let two first writers deadlock on the gap.
        await conn.execute(
          `INSERT INTO \`${table}\` (namespace, resource_key, highest_token) VALUES (?, ?, 0)
           ON DUPLICATE KEY UPDATE highest_token = highest_token`,
          [w.namespace, w.key],
        );
        const [rows] = await conn.execute<RowDataPacket[]>(
          `SELECT CAST(highest_token AS CHAR) AS highest FROM \`${table}\` WHERE namespace = ? AND resource_key = ? FOR UPDATE`,
          [w.namespace, w.key],
        );
        const highest = BigInt(String(rows[0]!.highest));
        if (w.token < highest) throw new StaleTokenError(w.namespace, w.key, w.token, highest);
        // Equal token = the same permit writing again: allowed. A larger one raises the fence.
        const next = w.token > highest ? w.token : highest;
        if (w.token > highest) {
          await conn.execute(`UPDATE \`${table}\` SET highest_token = ?, updated_at = UTC_TIMESTAMP(3) WHERE namespace = ? AND resource_key = ?`, [
            tok,
            w.namespace,
            w.key,
          ]);
        }
        const [ops] = await conn.execute<RowDataPacket[]>(`SELECT resource_key FROM \`${opsTable}\` WHERE namespace = ? AND operation_id = ? FOR UPDATE`, [
          w.namespace,
          w.operationId,
        ]);
        if (ops.length > 0) {
          const storedKey = Buffer.from(ops[0]!.resource_key as Buffer).toString('utf8');
          if (storedKey !== w.key) throw new OperationConflictError(`operation ${w.operationId} was already applied to another key`);
          await conn.commit(); // keeps the raised fence: a legitimate token was seen
          return { applied: false, duplicate: true, highestToken: next };
        }
        await conn.execute(`INSERT INTO \`${opsTable}\` (namespace, operation_id, resource_key, token) VALUES (?, ?, ?, ?)`, [
          w.namespace,
          w.operationId,
          w.key,
          tok,
        ]);
        await w.apply(conn);
        await conn.commit();
        return { applied: true, duplicate: false, highestToken: next };
      } catch (err) {
        await conn.rollback().catch(() => {});
        throw err;
      }
    } finally {
      conn.release();
    }
  }

  async function write(w: FencedWrite): Promise<FencedWriteResult> {
    checkToken(w.token);
    if (typeof w.operationId !== 'string' || w.operationId.length === 0 || Buffer.byteLength(w.operationId) > 255) {
      throw new TypeError('operationId must be 1-255 bytes');
    }
    if (Buffer.byteLength(w.key) > 768 || w.key.length === 0) throw new TypeError('key must be 1-768 bytes');
    if (Buffer.byteLength(w.namespace) > 255) throw new TypeError('namespace must be at most 255 bytes');
    for (let i = 0; ; i++) {
      try {
        return await attempt(w);
      } catch (err) {
        // A deadlock rolled the whole transaction back (apply included): running it again is safe.
        const code = (err as { code?: unknown }).code;
        if (i < maxRetries && typeof code === 'string' && RETRYABLE_SQL.has(code)) continue;
        throw err;
      }
    }
  }

  async function highestToken(namespace: string, key: string): Promise<bigint> {
    const [rows] = await pool.execute<RowDataPacket[]>(
      `SELECT CAST(highest_token AS CHAR) AS highest FROM \`${table}\` WHERE namespace = ? AND resource_key = ?`,
      [namespace, key],
    );
    return rows.length > 0 ? BigInt(String(rows[0]!.highest)) : 0n;
  }

  return { table, opsTable, ensureSchema, write, highestToken };
}
