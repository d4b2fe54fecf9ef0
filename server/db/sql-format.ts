// Client-side statement texts: mysql2's own `format` (sql-escaper), without a walk that can change
// nothing.
//
// Every value of a transaction's texts is escaped client-side (db/pipeline.ts: `format(sql,
// values)`, which walks the statement for its `?` marks, skipping strings, identifiers and
// comments). The pipeline then hands mysql2 the finished text, and mysql2's `query(text)` formats
// it again with an empty value list: sql-escaper walks the whole text — now with every escaped
// value in it — and returns it unchanged. That second walk was a third of sql-escaper's samples in
// an on-CPU profile of the gateway on `unkeyed-batch` (docs/benchmarks.md, "The gateway's
// JavaScript on the dispatch path"). `queryFormat` (installed on the pool by createPool) returns a
// text with no values as it is and formats any other exactly as mysql2 would.
//
// Tried and not kept: the pieces of each statement text around its marks, cached per text (the
// walk once per shape). Orbit's texts are built per call (IN lists, multi-row VALUES), so the
// cache lookup hashed — and first flattened — a fresh string of the statement's length every time:
// in the same profile the lookup cost as much as the walk it saved.
import mysql, { type SqlValue, type Timezone } from 'mysql2';

/**
 * A JSON text (the output of JSON.stringify, nothing else) as a value of a statement: written as
 * a string literal with only `\` and `'` escaped. JSON.stringify escapes every control character
 * (U+0000–U+001F, so no raw NUL, \b, \t, \n, \r or \x1a) and writes no whitespace, so in a
 * single-quoted literal under backslash escapes — MariaDB's default and what mysql2's escaping
 * assumes — those two are the only characters that need it; `"` needs none. sql-escaper's
 * `escapeString` escapes `"` as well, and a JSON text is full of them: it went character by
 * character over every submit's frozen reply (the receipts' `response_data`), 40–52 µs of
 * formatting for a 5-row receipts INSERT against 9–13 µs with this (docs/benchmarks.md, "Requests
 * per submit transaction", session 30).
 */
export class JsonText {
  constructor(readonly json: string) {}
  toSqlString(): string {
    const j = this.json;
    return j.indexOf('\\') < 0 && j.indexOf("'") < 0 ? `'${j}'` : `'${j.replace(/[\\']/g, '\\$&')}'`;
  }
}

/** formatSql(sql, values, …): exactly `mysql.format(sql, values, stringifyObjects, timezone)`. */
export function formatSql(sql: string, values: unknown, stringifyObjects?: boolean, timezone?: Timezone): string {
  // An empty list changes nothing: sql-escaper only walks the text (under the mode flags mysql2
  // passes — none — the walk cannot throw) and returns it.
  if (values === undefined || values === null || (Array.isArray(values) && values.length === 0)) return sql;
  return mysql.format(sql, values as SqlValue[], stringifyObjects, timezone);
}

/** mysql2's `queryFormat` hook (called with the connection as `this`): formatSql with the
 * connection's own options, as mysql2's default `format` would use them. */
export function queryFormat(this: { config: { stringifyObjects?: boolean } }, sql: string, values: unknown, timezone?: Timezone): string {
  return formatSql(sql, values, this.config.stringifyObjects, timezone);
}
