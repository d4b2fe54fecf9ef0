// Round trips, not statements, are what a transaction waits for. On a loaded 2-core machine a
// statement's round trip costs 0.3–0.5 ms of waiting (the gateway, MariaDB and the workers share
// the cores), and a key turnover's result transaction was 16 of them (docs/benchmarks.md). A
// pipelined connection sends the writes whose answer nobody reads — `START TRANSACTION`, the
// UPDATEs of a coalesced result batch, the INSERT of hand-off attempts, the events — together with
// the next statement whose answer is read, as one multi-statement query (client-side escaping, the
// same `format` mysql2's `query(sql, values)` uses; MariaDB runs the statements in order and stops
// at the first error, so a failure surfaces at that later await and rolls the transaction back).
// `execute` (prepared statements) cannot join a multi-statement text: queued writes go first.
import type { FieldPacket, QueryResult } from 'mysql2/promise';
import type { PoolConnection as Conn } from 'mysql2/promise';

/** Process totals read by /metrics (orbit_db_transactions_total, orbit_db_transaction_round_trips_total):
 * round trips per transaction is the figure pipelining changes, and a noisy machine cannot blur it. */
export const transactionStats = { transactions: 0, roundTrips: 0 };

const queues = new WeakMap<object, string[]>();
/** Pipelined connections whose transaction commitWith() already committed. */
const committed = new WeakSet<object>();
const targets = new WeakMap<object, Conn>();

/** The raw connection behind a pipelined one (itself when it is not pipelined). */
export function rawConnection(c: Conn): Conn {
  return targets.get(c) ?? c;
}

/** Wraps a connection (for one transaction): its `query` sends the queued writes with it. */
export function pipelined(conn: Conn): Conn {
  const pending: string[] = [];
  const flush = async () => {
    if (pending.length === 0) return;
    transactionStats.roundTrips++;
    await conn.query(pending.splice(0).join(';\n'));
  };
  const query = async (sql: unknown, values?: unknown): Promise<[QueryResult, FieldPacket[]]> => {
    if (pending.length === 0 || typeof sql !== 'string') {
      await flush();
      transactionStats.roundTrips++;
      return (conn.query as (s: unknown, v?: unknown) => Promise<[QueryResult, FieldPacket[]]>)(sql, values);
    }
    const n = pending.length + 1;
    transactionStats.roundTrips++;
    const text = [...pending.splice(0), conn.format(sql, (values as unknown[] | undefined) ?? [])].join(';\n');
    const [results, fields] = (await conn.query(text)) as unknown as [QueryResult[], FieldPacket[][]];
    // One result (and field list) per statement, in order; the caller's is the last.
    return [results[n - 1]!, fields[n - 1]!];
  };
  const execute = async (...args: unknown[]) => {
    await flush();
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
  queues.set(proxy, pending);
  targets.set(proxy, conn);
  return proxy;
}

/** commitWith(c, sql, values): the transaction's last statement and its COMMIT in one round trip
 * (with any queued writes before them); returns the statement's result. For a transaction whose
 * outcome no later statement can change — e.g. a batch of starts: its UPDATE's row count only
 * decides how the frames are answered, and a read-back for that may run after the commit. On a
 * connection that is not pipelined it only runs the statement (the caller commits as usual). */
export async function commitWith(c: Conn, sql: string, values: unknown[] = []): Promise<[QueryResult, FieldPacket[]]> {
  const pending = queues.get(c);
  if (!pending) return c.query(sql, values);
  const conn = rawConnection(c);
  const n = pending.length + 2;
  const text = [...pending.splice(0), conn.format(sql, values), 'COMMIT'].join(';\n');
  transactionStats.roundTrips++;
  const [results, fields] = (await conn.query(text)) as unknown as [QueryResult[], FieldPacket[][]];
  committed.add(c);
  return [results[n - 2]!, fields[n - 2]!];
}

/** True when commitWith() committed this (pipelined) connection's transaction. */
export function isCommitted(c: Conn): boolean {
  return committed.has(c);
}

/** write(c, sql, values): a statement whose result is not read. On a pipelined connection it is
 * queued and sent with the transaction's next query (at the latest with its COMMIT); otherwise it
 * runs now. Only for statements whose failure may surface later (any failure rolls back). */
export async function write(c: Conn, sql: string, values: unknown[] = []): Promise<void> {
  const pending = queues.get(c);
  if (pending) pending.push(rawConnection(c).format(sql, values));
  else await c.query(sql, values);
}
