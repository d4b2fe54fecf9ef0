// Round trips, not statements, are what a transaction waits for. On a loaded 2-core machine a
// statement's round trip costs 0.3–0.5 ms of waiting (the gateway, MariaDB and the workers share
// the cores), and a key turnover's result transaction was 16 of them (docs/benchmarks.md). A
// pipelined connection sends the writes whose answer nobody reads — `START TRANSACTION`, the
// UPDATEs of a coalesced result batch, the INSERT of hand-off attempts, the events — together with
// the next statement whose answer is read, as one multi-statement query (client-side escaping, the
// same `format` mysql2's `query(sql, values)` uses; MariaDB runs the statements in order and stops
// at the first error, so a failure surfaces at that later await and rolls the transaction back).
// `execute` (prepared statements) cannot join a multi-statement text: queued writes go first.
// A round trip never exceeds the connection's byte budget (db/packet-budget.ts): texts that
// together would are sent in several, in order.
import type { FieldPacket, QueryResult } from 'mysql2/promise';
import type { PoolConnection as Conn } from 'mysql2/promise';
import { budgetOf, roundTrips } from './packet-budget.js';

/** Process totals read by /metrics (orbit_db_transactions_total, orbit_db_transaction_round_trips_total):
 * round trips per transaction is the figure pipelining changes, and a noisy machine cannot blur it. */
export const transactionStats = { transactions: 0, roundTrips: 0 };

/** A pipelined connection's state: the raw connection, the writes waiting for the next round
 * trip, and whether commitWith() already committed its transaction. */
interface Pipe {
  conn: Conn;
  pending: string[];
  committed: boolean;
}

const pipes = new WeakMap<object, Pipe>();

/** The raw connection behind a pipelined one (itself when it is not pipelined). */
export function rawConnection(c: Conn): Conn {
  return pipes.get(c)?.conn ?? c;
}

/** The queued writes, then `statements`, in as few round trips as the byte budget allows (one
 * unless the texts together exceed it: db/packet-budget.ts); returns the results of `statements`
 * (mysql2 answers a multi-statement text with one result and field list per statement). Texts
 * still run in order, so a split changes nothing but the number of round trips. */
async function send(p: Pipe, statements: string[]): Promise<[QueryResult[], FieldPacket[][]]> {
  const texts = [...p.pending.splice(0), ...statements];
  const results: QueryResult[] = [];
  const fields: FieldPacket[][] = [];
  for (const trip of roundTrips(texts, budgetOf(p.conn))) {
    transactionStats.roundTrips++;
    if (trip.length === 1) {
      const [r, f] = await p.conn.query(trip[0]!);
      results.push(r);
      fields.push(f);
    } else {
      const [r, f] = (await p.conn.query(trip.join(';\n'))) as unknown as [QueryResult[], FieldPacket[][]];
      results.push(...r);
      fields.push(...f);
    }
  }
  const from = texts.length - statements.length;
  return [results.slice(from), fields.slice(from)];
}

/** Wraps a connection (for one transaction): its `query` sends the queued writes with it. */
export function pipelined(conn: Conn): Conn {
  const p: Pipe = { conn, pending: [], committed: false };
  const query = async (sql: unknown, values?: unknown): Promise<[QueryResult, FieldPacket[]]> => {
    if (typeof sql !== 'string') {
      // The object form (options) cannot join a multi-statement text: the queue goes first.
      if (p.pending.length > 0) await send(p, []);
      transactionStats.roundTrips++;
      return (conn.query as (s: unknown, v?: unknown) => Promise<[QueryResult, FieldPacket[]]>)(sql, values);
    }
    const [[r], [f]] = await send(p, [conn.format(sql, (values as unknown[] | undefined) ?? [])]);
    return [r!, f!];
  };
  const execute = async (...args: unknown[]) => {
    // A prepared statement cannot join a multi-statement text: the queue goes first.
    if (p.pending.length > 0) await send(p, []);
    transactionStats.roundTrips++;
    return (conn.execute as (...a: unknown[]) => unknown)(...args);
  };
  const proxy = new Proxy(conn, {
    get(target, prop) {
      if (prop === 'query') return query;
      if (prop === 'execute') return execute;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  pipes.set(proxy, p);
  return proxy;
}

/** commitWith(c, sql, values): the transaction's last statement and its COMMIT in one round trip
 * (with any queued writes before them); returns the statement's result. For a transaction whose
 * outcome no later statement can change — e.g. a batch of starts: its UPDATE's row count only
 * decides how the frames are answered, and a read-back for that may run after the commit. After
 * it, write() refuses (a queued write would never be sent). On a connection that is not pipelined
 * it only runs the statement (the caller commits as usual). */
export async function commitWith(c: Conn, sql: string, values: unknown[] = []): Promise<[QueryResult, FieldPacket[]]> {
  const p = pipes.get(c);
  if (!p) return c.query(sql, values);
  const [[r], [f]] = await send(p, [p.conn.format(sql, values), 'COMMIT']);
  p.committed = true;
  return [r!, f!];
}

/** True when commitWith() committed this (pipelined) connection's transaction. */
export function isCommitted(c: Conn): boolean {
  return pipes.get(c)?.committed ?? false;
}

/** write(c, sql, values): a statement whose result is not read. On a pipelined connection it is
 * queued and sent with the transaction's next query (at the latest with its COMMIT); otherwise it
 * runs now. Only for statements whose failure may surface later (any failure rolls back). */
export async function write(c: Conn, sql: string, values: unknown[] = []): Promise<void> {
  const p = pipes.get(c);
  if (!p) return void (await c.query(sql, values));
  if (p.committed) throw new Error('write() after commitWith(): the transaction is already committed');
  p.pending.push(p.conn.format(sql, values));
}
