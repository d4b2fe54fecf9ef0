// The byte budget of one statement text: the server drops the connection on a packet over
// max_allowed_packet, failing a whole coalesced transaction. Multi-row statements are chunked by
// chunkRows and the pipeline's texts split by roundTrips to stay within it.
import mysql from 'mysql2/promise';
import type { Pool } from 'mysql2/promise';
import { JsonText } from './sql-format.js';

/** 4× the largest single row a valid input makes. */
export const MIN_MAX_ALLOWED_PACKET = 4 * 1024 * 1024;
const PROTOCOL_HEADROOM = 64 * 1024;
const STATEMENT_TEXT = 4 * 1024;
const SQL_PER_VALUE = 16;

export interface PacketBudget {
  maxAllowedPacket: number;
  bytes: number;
}

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

/** Extra round trips or statements the budget made. */
export const budgetStats = { splits: 0 };

const byPool = new WeakMap<object, PacketBudget>();
const byConnection = new WeakMap<object, PacketBudget>();

export function trackPacketBudget(pool: Pool): void {
  const b = { ...DEFAULT_BUDGET };
  byPool.set(pool, b);
  pool.on('connection', (core) => byConnection.set(core, b));
}

export async function readPacketBudget(pool: Pool): Promise<PacketBudget> {
  const [[row]] = (await pool.query('SELECT @@max_allowed_packet AS m')) as unknown as [[{ m: string | number }]];
  const read = budgetFor(Number(row.m));
  const b = byPool.get(pool);
  if (b) Object.assign(b, read);
  return read;
}

export function poolBudget(pool: Pool): PacketBudget {
  return byPool.get(pool) ?? DEFAULT_BUDGET;
}

/** Typed `object` because pipeline.ts imports this module. */
export function budgetOf(c: object): PacketBudget {
  const pooled = (c as { conn?: object }).conn ?? c;
  const core = (pooled as { connection?: object }).connection;
  return (core && byConnection.get(core)) ?? DEFAULT_BUDGET;
}

export class StatementTooLarge extends Error {
  constructor(bytes: number, budget: PacketBudget, what: string) {
    super(
      `${what} of ${bytes} bytes exceeds the statement budget of ${budget.bytes} bytes ` + `(max_allowed_packet ${budget.maxAllowedPacket}); it was not sent`,
    );
  }
}

/** mysql2's escaping turns a character into at most two. */
function escapedBound(v: unknown): number {
  if (v === null || v === undefined) return 4;
  if (typeof v === 'string') return 2 * Buffer.byteLength(v) + 2;
  if (v instanceof JsonText) return 2 * Buffer.byteLength(v.json) + 2;
  if (Buffer.isBuffer(v)) return 2 * v.length + 3;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v).length;
  return Buffer.byteLength(mysql.escape(v as Parameters<typeof mysql.escape>[0]));
}

/** `valuesOf(row)` lists every value the statement carries for the row. */
export function chunkRows<T>(c: object, rows: T[], valuesOf: (row: T) => unknown[]): T[][] {
  const budget = budgetOf(c);
  const rowBytes = (row: T) => {
    let n = 0;
    for (const v of valuesOf(row)) n += escapedBound(v) + SQL_PER_VALUE;
    return n;
  };
  return groupWithin(rows, rowBytes, budget.bytes - STATEMENT_TEXT, 0, (n) => new StatementTooLarge(n, budget, 'one row of a multi-row statement'));
}

export function roundTrips(texts: string[], budget: PacketBudget): string[][] {
  // A UTF-16 unit is at most 3 bytes of UTF-8: skip counting bytes when that bound fits.
  let bound = 0;
  for (const t of texts) bound += 3 * t.length + 2;
  if (bound <= budget.bytes) return texts.length > 0 ? [texts] : [];
  return groupWithin(
    texts,
    (t) => Buffer.byteLength(t),
    budget.bytes,
    2,
    (n, t) => new StatementTooLarge(n, budget, `a statement (${t.slice(0, 40)}…)`),
  );
}

/** `items` in order, in groups whose sizes, with `gap` between two, stay within `room`. */
function groupWithin<T>(items: T[], sizeOf: (item: T) => number, room: number, gap: number, tooLarge: (n: number, item: T) => Error): T[][] {
  const groups: T[][] = [];
  let group: T[] = [];
  let used = 0;
  for (const item of items) {
    const n = sizeOf(item);
    if (n > room) throw tooLarge(n, item);
    if (group.length > 0 && used + gap + n > room) {
      groups.push(group);
      group = [];
    }
    used = group.length > 0 ? used + gap + n : n;
    group.push(item);
  }
  if (group.length > 0) groups.push(group);
  budgetStats.splits += Math.max(0, groups.length - 1);
  return groups;
}
