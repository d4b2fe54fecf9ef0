// Round trips, not statements, are what a transaction waits for. A transaction (`Tx`) sends the
// writes whose answer nobody reads (START TRANSACTION, a batch's UPDATEs, a claim's INSERTs, the
// events) with the next statement whose answer is read, as one multi-statement text (mysql2's own
// escaping; MariaDB stops at the first error, so a failure surfaces at that later await and rolls
// the transaction back). A round trip stays within the byte budget (db/packet-budget.ts).
// A `Tx`, not the connection, says at every call site that a write may be deferred and that a
// lock lasts to the commit: what must run in a transaction (a locking read, write(), the ledger's
// flush) takes a `Tx`; what runs on either takes a `Conn`; what starts one takes the pool or a `PooledConn`.
import type { FieldPacket, PoolConnection, QueryResult } from 'mysql2/promise';
import { budgetOf, roundTrips } from './packet-budget.js';

/** A connection out of the pool: what a transaction starts on (transactionOn), and what holds a
 * named lock across transactions. Never a transaction itself. */
export type PooledConn = PoolConnection;

/** What a statement runs on: a pooled connection in autocommit, or a transaction's `Tx`. A plain
 * read takes it; anything that relies on a lock or on a deferred write takes `Tx` instead. */
export type Conn = Pick<PoolConnection, 'query' | 'execute' | 'format'>;

/** Process totals for /metrics: round trips per transaction is the figure pipelining changes. */
export const transactionStats = { transactions: 0, roundTrips: 0 };

/** One try of a transaction (transactionOn): its unread writes wait in `pending` for the next round
 * trip. Not a `PooledConn`, so code that would start its own transaction cannot take it. */
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

/** The queued writes, then `statements`, in as few round trips as the byte budget allows (in
 * order, so a split changes nothing else); returns the results of `statements`. */
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

/** The transaction's last statements and its COMMIT in one round trip, each result read: for a
 * transaction no later statement can change (a batch of starts). After it, write() refuses and
 * transactionOn neither commits nor runs the transaction again. */
export async function commitWithAll(tx: Tx, statements: [string, unknown[]][]): Promise<[QueryResult, FieldPacket[]][]> {
  const [r, f] = await send(tx, [...formatted(tx, statements), 'COMMIT']);
  tx.committed = true;
  return statements.map((_, i) => [r[i]!, f[i]!]);
}

/** Several statements (after the queued writes) in one round trip, each result read. */
export async function queryAll(tx: Tx, statements: [string, unknown[]][]): Promise<[QueryResult, FieldPacket[]][]> {
  if (tx.committed) throw new Error('queryAll() after commitWithAll(): the transaction is already committed');
  const [r, f] = await send(tx, formatted(tx, statements));
  return statements.map((_, i) => [r[i]!, f[i]!]);
}

const formatted = (tx: Tx, statements: [string, unknown[]][]) => statements.map(([sql, values]) => tx.conn.format(sql, values));

/** A read whose text depends on no value, sent prepared (parsed and planned once per connection,
 * cheaper for the server than a text) when nothing waits to go with it, else as text with the
 * queued writes: a prepared statement cannot join a multi-statement text. */
export async function readFixedShape<T extends QueryResult>(c: Conn, sql: string, values: unknown[]): Promise<[T, FieldPacket[]]> {
  if (c instanceof Tx && c.pending.length > 0) return c.query<T>(sql, values);
  return c.execute<T>(sql, values as never);
}

/** A statement whose result is not read, sent with the transaction's next query (at the latest its
 * COMMIT): only for statements whose failure may surface later. */
export async function write(tx: Tx, sql: string, values: unknown[] = []): Promise<void> {
  if (tx.committed) throw new Error('write() after commitWithAll(): the transaction is already committed');
  tx.pending.push(tx.conn.format(sql, values));
}
