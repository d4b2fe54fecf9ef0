// The byte budget of one statement text. The server refuses a packet larger than
// max_allowed_packet (errno 1153, "Got a packet bigger than 'max_allowed_packet' bytes") and drops
// the connection, so a coalesced transaction whose statements carry many large values — 24 results
// of 250 KiB each, written to attempts, tasks and events, pipelined into one 18 MiB query — failed
// as a whole although every frame in it was valid (issue 18). Every text the gateway builds from
// a variable number of rows therefore stays within the budget, in two places:
//   - multi-row statements (INSERT … VALUES of many rows, UPDATE … CASE over many rows) are cut
//     into chunks by chunkRows(), from an upper bound of each row's escaped size;
//   - the pipeline (db/pipeline.ts) sends its queued texts in as many round trips as the budget
//     needs, measuring the exact texts.
// The coalescers also bound a batch by the bytes of its values (the coalescer's weight, dispatch/coalesce.ts), so a
// transaction's size, its memory and its lock time stay bounded too; correctness does not rest on it.
//
// The gateway reads @@max_allowed_packet once at start (readPacketBudget; the session value is the
// global one at connect time and read-only) and refuses to start below MIN_MAX_ALLOWED_PACKET.
// A pool that never read it (the CLIs, test pools) uses the budget of that minimum.
import mysql from 'mysql2/promise';
import type { Pool } from 'mysql2/promise';
import { JsonText } from './sql-format.js';

/** The smallest max_allowed_packet the gateway runs with: MySQL 5.7's default, and 4× the largest
 * single row a valid input makes (a 256 KiB payload or output escaped to at most 512 KiB, with a
 * 4096-character error message, a frozen reply or a hello's 1.1 MB handler filter — under 1.2 MB). */
export const MIN_MAX_ALLOWED_PACKET = 4 * 1024 * 1024;
/** Kept free in every packet: the command byte and packet headers take a few bytes; the rest is
 * margin for what the budget does not measure (mysql2's own framing). */
const PROTOCOL_HEADROOM = 64 * 1024;
/** The fixed text of a multi-row statement (column lists, CASE heads, WHERE) is under 1 KiB; the
 * rows of a chunk get the budget minus this. */
const STATEMENT_TEXT = 4 * 1024;
/** Placeholder text a value brings with it at most (`WHEN ? THEN ?` is 13 bytes for two values,
 * `?, ` 3, a row's literals such as `'WAITING', 0, 0` are under 16 per value of the row). */
const SQL_PER_VALUE = 16;

export interface PacketBudget {
  /** The server's max_allowed_packet (bytes). */
  maxAllowedPacket: number;
  /** The largest statement text (UTF-8 bytes) one round trip may carry. */
  bytes: number;
}

/** The budget a server with this max_allowed_packet allows; throws one clear line below the minimum. */
export function budgetFor(maxAllowedPacket: number): PacketBudget {
  if (!Number.isSafeInteger(maxAllowedPacket) || maxAllowedPacket < MIN_MAX_ALLOWED_PACKET) {
    throw new Error(
      `the database's max_allowed_packet is ${maxAllowedPacket} bytes; Orbit needs at least ${MIN_MAX_ALLOWED_PACKET} ` +
        `(${MIN_MAX_ALLOWED_PACKET / 1048576} MiB): set max_allowed_packet=16M in the server's configuration`,
    );
  }
  return { maxAllowedPacket, bytes: maxAllowedPacket - PROTOCOL_HEADROOM };
}

const DEFAULT_BUDGET = budgetFor(MIN_MAX_ALLOWED_PACKET);

/** Process totals read by /metrics (orbit_db_budget_splits_total): extra round trips or
 * statements the budget made — how often coalesced work is cut because of its size. */
export const budgetStats = { splits: 0 };

/** pool → its budget (one object, updated in place by readPacketBudget); core connection → the
 * budget of its pool (set when the pool opens it). */
const byPool = new WeakMap<object, PacketBudget>();
const byConnection = new WeakMap<object, PacketBudget>();

/** Called by createPool: connections of `pool` take its budget (the minimum's until read). */
export function trackPacketBudget(pool: Pool): void {
  const b = { ...DEFAULT_BUDGET };
  byPool.set(pool, b);
  pool.on('connection', (core) => byConnection.set(core, b));
}

/** readPacketBudget(pool): reads @@max_allowed_packet (no lock) and makes it the budget of the
 * pool's connections. Throws (one line) when the server's value is below the minimum. */
export async function readPacketBudget(pool: Pool): Promise<PacketBudget> {
  const [[row]] = (await pool.query('SELECT @@max_allowed_packet AS m')) as unknown as [[{ m: string | number }]];
  const read = budgetFor(Number(row.m));
  const b = byPool.get(pool);
  if (b) Object.assign(b, read);
  return read;
}

/** The budget of a pool's connections (the minimum's until readPacketBudget read the server's). */
export function poolBudget(pool: Pool): PacketBudget {
  return byPool.get(pool) ?? DEFAULT_BUDGET;
}

/** The budget of a connection or of a transaction on one (db/pipeline.ts Tx, whose `conn` is the
 * pooled connection): its pool's, or the minimum's. Typed `object`: pipeline.ts imports this module. */
export function budgetOf(c: object): PacketBudget {
  const pooled = (c as { conn?: object }).conn ?? c;
  const core = (pooled as { connection?: object }).connection;
  return (core && byConnection.get(core)) ?? DEFAULT_BUDGET;
}

/** A statement text that alone exceeds the budget: not sent (the server would refuse it and drop
 * the connection). No valid input makes one once the server has MIN_MAX_ALLOWED_PACKET. */
export class StatementTooLarge extends Error {
  constructor(bytes: number, budget: PacketBudget, what: string) {
    super(
      `${what} of ${bytes} bytes exceeds the statement budget of ${budget.bytes} bytes ` + `(max_allowed_packet ${budget.maxAllowedPacket}); it was not sent`,
    );
  }
}

/** An upper bound of the bytes `v` takes in a statement once escaped (mysql2's escaping turns a
 * character into at most two: `'` → `\'`, NUL → `\0`; a Buffer becomes X'hex'). */
function escapedBound(v: unknown): number {
  if (v === null || v === undefined) return 4;
  if (typeof v === 'string') return 2 * Buffer.byteLength(v) + 2;
  if (v instanceof JsonText) return 2 * Buffer.byteLength(v.json) + 2;
  if (Buffer.isBuffer(v)) return 2 * v.length + 3;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v).length;
  return Buffer.byteLength(mysql.escape(v as Parameters<typeof mysql.escape>[0]));
}

/** chunkRows(c, rows, valuesOf): `rows` in order, cut into chunks whose multi-row statement stays
 * within c's budget; `valuesOf(row)` lists every value the statement carries for the row (a value
 * that appears in several CASE columns is listed once per appearance). One chunk in the common
 * case. Throws StatementTooLarge for a row that alone does not fit. */
export function chunkRows<T>(c: object, rows: T[], valuesOf: (row: T) => unknown[]): T[][] {
  const budget = budgetOf(c);
  const room = budget.bytes - STATEMENT_TEXT;
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let used = 0;
  for (const row of rows) {
    let n = 0;
    for (const v of valuesOf(row)) n += escapedBound(v) + SQL_PER_VALUE;
    if (n > room) throw new StatementTooLarge(n, budget, 'one row of a multi-row statement');
    if (chunk.length > 0 && used + n > room) {
      chunks.push(chunk);
      chunk = [];
      used = 0;
    }
    chunk.push(row);
    used += n;
  }
  if (chunk.length > 0) chunks.push(chunk);
  budgetStats.splits += Math.max(0, chunks.length - 1);
  return chunks;
}

/** roundTrips(texts, budget): consecutive texts grouped so that each group, joined with `;\n`,
 * stays within the budget (exact UTF-8 bytes). Throws StatementTooLarge for a text that alone
 * exceeds it, before anything is sent. */
export function roundTrips(texts: string[], budget: PacketBudget): string[][] {
  // The common case without counting bytes: a UTF-16 unit is at most 3 bytes of UTF-8, so texts
  // whose units × 3 (plus the separators) fit are one round trip. Buffer.byteLength of every text
  // was 1 % of the gateway's main thread on `unkeyed-batch` (docs/benchmarks.md, issue 19).
  let bound = 0;
  for (const t of texts) bound += 3 * t.length + 2;
  if (bound <= budget.bytes) return texts.length > 0 ? [texts] : [];
  const groups: string[][] = [];
  let group: string[] = [];
  let used = 0;
  for (const t of texts) {
    const n = Buffer.byteLength(t);
    if (n > budget.bytes) throw new StatementTooLarge(n, budget, `a statement (${t.slice(0, 40)}…)`);
    const joined = group.length > 0 ? used + 2 + n : n;
    if (group.length > 0 && joined > budget.bytes) {
      groups.push(group);
      group = [t];
      used = n;
    } else {
      group.push(t);
      used = joined;
    }
  }
  if (group.length > 0) groups.push(group);
  budgetStats.splits += Math.max(0, groups.length - 1);
  return groups;
}
