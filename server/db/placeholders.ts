// Statement text over a variable number of values or rows, and the one read of a row by its id.
import type { RowDataPacket } from 'mysql2/promise';
import { isId } from '@orbit/protocol/ids';
import type { Conn, Pool, Tx } from './pool.js';

/** `?,?,?`: `n` placeholders, for `IN (…)`. */
export function placeholders(n: number): string {
  return n > 0 ? '?,'.repeat(n - 1) + '?' : '';
}

/** `(?, ?), (?, ?)`: `n` copies of one row's text, for a multi-row `VALUES` or a row `IN (…)`. */
export function placeholderRows(n: number, row: string): string {
  return Array.from({ length: n }, () => row).join(', ');
}

/** `CASE on WHEN ? THEN ? … [ELSE orElse] END`: `n` pairs of (key, value) arguments, for a per-row
 * value in one statement. */
export function caseWhen(on: string, n: number, orElse?: string): string {
  return `CASE ${on} ${Array.from({ length: n }, () => 'WHEN ? THEN ?').join(' ')}${orElse ? ` ELSE ${orElse}` : ''} END`;
}

const LOCKS = { none: '', share: ' LOCK IN SHARE MODE', update: ' FOR UPDATE', nowait: ' FOR UPDATE NOWAIT' };

/** getX(namespaceId, id, lock) → the row `id` of namespace `namespaceId`, or null; a lock only in a
 * transaction (it lasts to its end). */
export interface ByIdRead<T> {
  (db: Pool | Conn, namespaceId: string, id: string): Promise<T | null>;
  (tx: Tx, namespaceId: string, id: string, lock: keyof typeof LOCKS): Promise<T | null>;
}

/** The one read of a row by its id, for `table`. An id that is not 32 lowercase hex can never
 * exist: no SQL for it (protocol/ids.ts). */
export function byIdRead<T extends RowDataPacket>(table: string, columns: string): ByIdRead<T> {
  return async (db: Pool | Conn, namespaceId: string, id: string, lock: keyof typeof LOCKS = 'none') => {
    if (!isId(id)) return null;
    const [rows] = await db.execute<T[]>(`SELECT ${columns} FROM ${table} WHERE id = ? AND namespace_id = ?${LOCKS[lock]}`, [id, namespaceId]);
    return rows[0] ?? null;
  };
}

/** The conditions of a WHERE clause, each added with its values in text order. */
export class Conditions {
  private readonly parts: string[] = [];
  readonly args: unknown[] = [];

  constructor(sql: string, ...args: unknown[]) {
    this.and(sql, ...args);
  }

  and(sql: string, ...args: unknown[]): void {
    this.parts.push(sql);
    this.args.push(...args);
  }

  toString(): string {
    return this.parts.join(' AND ');
  }
}
