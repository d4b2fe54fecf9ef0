// Round trips, not statements, are what a transaction waits for: on a loaded machine each one is
// a wait while the gateway, MariaDB and the workers share the cores. A transaction (`Tx`) sends the
// writes whose answer nobody reads — `START TRANSACTION`, the UPDATEs of a coalesced result batch,
// the INSERT of a claim's attempts, the events — together with
// the next statement whose answer is read, as one multi-statement query (client-side escaping, the
// same `format` mysql2's `query(sql, values)` uses; MariaDB runs the statements in order and stops
// at the first error, so a failure surfaces at that later await and rolls the transaction back).
// `execute` (prepared statements) cannot join a multi-statement text: queued writes go first.
// A round trip never exceeds the connection's byte budget (db/packet-budget.ts): texts that
// together would are sent in several, in order.
// The transaction is a `Tx` object, not the connection: its type says at every call site that a
// write may be deferred and that a lock lasts to the commit (River's ExecutorTx). A function that
// must run inside a transaction — a locking read, a write(), the ledger's flush — takes a `Tx`; one
// that runs on either takes a `Conn`; one that starts a transaction takes the pool or a `PooledConn`.
import type { FieldPacket, PoolConnection, QueryResult } from 'mysql2/promise';
import { budgetOf, roundTrips } from './packet-budget.js';

/** A connection out of the pool: what a transaction starts on (transactionOn), and what holds a
 * named lock across transactions. Never a transaction itself. */
export type PooledConn = PoolConnection;

/** What a statement runs on: a pooled connection in autocommit, or a transaction's `Tx`. A plain
 * read takes it; anything that relies on a lock or on a deferred write takes `Tx` instead. */
export type Conn = Pick<PoolConnection, 'query' | 'execute' | 'format'>;

/** Process totals read by /metrics (orbit_db_transactions_total, orbit_db_transaction_round_trips_total):
 * round trips per transaction is the figure pipelining changes, and a noisy machine cannot blur it. */
export const transactionStats = { transactions: 0, roundTrips: 0 };

/**
 * One transaction on a pooled connection (made by transactionOn, one per try): its statements go
 * out through the pipeline, its unread writes wait in `pending` for the next round trip. `pending`
 * and `committed` are this module's to change (write, commitWithAll); `conn` is the connection the
 * transaction runs on. Not a `PooledConn`: code that would start its own transaction cannot take it.
 */
export class Tx {
  /** The writes (formatted) waiting for the transaction's next round trip. */
  readonly pending: string[] = [];
  /** True once commitWithAll() committed the transaction. */
  committed = false;

  constructor(readonly conn: PooledConn) {}

  /** Sends the queued writes with the statement, in one multi-statement text; returns the
   * statement's own result. */
  readonly query = (async (sql: unknown, values?: unknown): Promise<[QueryResult, FieldPacket[]]> => {
    if (typeof sql !== 'string') {
      // The object form (options) cannot join a multi-statement text: the queue goes first.
      if (this.pending.length > 0) await send(this, []);
      transactionStats.roundTrips++;
      return (this.conn.query as (s: unknown, v?: unknown) => Promise<[QueryResult, FieldPacket[]]>)(sql, values);
    }
    const [[r], [f]] = await send(this, [this.conn.format(sql, (values as unknown[] | undefined) ?? [])]);
    return [r!, f!];
  }) as PoolConnection['query'];

  /** A prepared statement, after the queued writes (it cannot join a multi-statement text). */
  readonly execute = (async (...args: unknown[]) => {
    if (this.pending.length > 0) await send(this, []);
    transactionStats.roundTrips++;
    return (this.conn.execute as (...a: unknown[]) => unknown)(...args);
  }) as PoolConnection['execute'];

  /** mysql2's client-side escaping (the text `query(sql, values)` would send). */
  format(sql: string, values?: unknown[]): string {
    return this.conn.format(sql, values);
  }
}

/** The queued writes, then `statements`, in as few round trips as the byte budget allows (one
 * unless the texts together exceed it: db/packet-budget.ts); returns the results of `statements`
 * (mysql2 answers a multi-statement text with one result and field list per statement). Texts
 * still run in order, so a split changes nothing but the number of round trips. */
async function send(tx: Tx, statements: string[]): Promise<[QueryResult[], FieldPacket[][]]> {
  const texts = [...tx.pending.splice(0), ...statements];
  /** Where the results of `statements` start: the results of the statements before them are not read. */
  const from = texts.length - statements.length;
  const results: QueryResult[] = [];
  const fields: FieldPacket[][] = [];
  for (const trip of roundTrips(texts, budgetOf(tx.conn))) {
    transactionStats.roundTrips++;
    if (trip.length === 1) {
      const [r, f] = await tx.conn.query(trip[0]!);
      results.push(r);
      fields.push(f);
    } else {
      const [r, f] = (await tx.conn.query(trip.join(';\n'))) as unknown as [QueryResult[], FieldPacket[][]];
      results.push(...r);
      fields.push(...f);
    }
  }
  return [results.slice(from), fields.slice(from)];
}

/** commitWithAll(tx, [[sql, values], …]): the transaction's last statements and its COMMIT in one
 * round trip (with any queued writes before them), each result read. For a transaction whose
 * outcome no later statement can change — e.g. a batch of starts: its UPDATE's row count only
 * decides how the frames are answered, and a read-back for that may run after the commit. After
 * it, write() refuses (a queued write would never be sent) and transactionOn neither commits nor
 * runs the transaction again. */
export async function commitWithAll(tx: Tx, statements: [string, unknown[]][]): Promise<[QueryResult, FieldPacket[]][]> {
  const [r, f] = await send(tx, [...formatted(tx, statements), 'COMMIT']);
  tx.committed = true;
  return statements.map((_, i) => [r[i]!, f[i]!]);
}

/** queryAll(tx, [[sql, values], …]): several statements (after the queued writes) in one round
 * trip, each result read — e.g. a frame batch's first round trip (the credential check with
 * the clock, the starts' UPDATE, the results' locking read: frame-committer.ts) or a claim round's
 * (the credential check with the permit hints). */
export async function queryAll(tx: Tx, statements: [string, unknown[]][]): Promise<[QueryResult, FieldPacket[]][]> {
  if (tx.committed) throw new Error('queryAll() after commitWithAll(): the transaction is already committed');
  const [r, f] = await send(tx, formatted(tx, statements));
  return statements.map((_, i) => [r[i]!, f[i]!]);
}

const formatted = (tx: Tx, statements: [string, unknown[]][]) => statements.map(([sql, values]) => tx.conn.format(sql, values));

/** readFixedShape(c, sql, values): a read of a fixed shape (its text depends on no value: values
 * only in `?` marks) sent prepared — binary protocol, parsed and planned once per connection
 * (mysql2 caches it by text; pool.ts bounds the cache) — when nothing waits to go with it, and as
 * text with the queued writes when something does (a prepared statement cannot join a
 * multi-statement text, and sending the queue first would cost a round trip). A prepared
 * execution costs the server about half of a parsed text (bench/statement-forms.ts measures it).
 * Not for a transaction's first statement: START TRANSACTION waits in the queue, so that one goes
 * as text. */
export async function readFixedShape<T extends QueryResult>(c: Conn, sql: string, values: unknown[]): Promise<[T, FieldPacket[]]> {
  if (c instanceof Tx && c.pending.length > 0) return c.query<T>(sql, values);
  return c.execute<T>(sql, values as never);
}

/** write(tx, sql, values): a statement whose result is not read, queued and sent with the
 * transaction's next query (at the latest with its COMMIT). Only for statements whose failure may
 * surface later (any failure rolls back). */
export async function write(tx: Tx, sql: string, values: unknown[] = []): Promise<void> {
  if (tx.committed) throw new Error('write() after commitWithAll(): the transaction is already committed');
  tx.pending.push(tx.conn.format(sql, values));
}
