// Client-side statement texts, built faster with the same output as mysql2's `format` (sql-escaper).
//
// Every value of a transaction's texts is escaped client-side (db/pipeline.ts): `format(sql,
// values)` walks the whole statement for its `?` marks (skipping strings, identifiers, comments)
// and escapes each value. Two costs of that were pure repetition (perf, on-CPU, of the gateway on
// `unkeyed-batch`, docs/benchmarks.md "The gateway's JavaScript on the dispatch path"):
//  - the walk, redone for every call of the same statement shape — the result transaction's CASE
//    UPDATEs carry 14 marks per row;
//  - a second walk of every finished text: the pipeline hands mysql2 texts already formatted, and
//    mysql2's `query(text)` formats them again with no values (a walk that can change nothing).
// `queryFormat` (installed on the pool by createPool) keeps the walk's result per statement text —
// the literal pieces between its marks — and returns a text with no values as it is. The values
// still go through sql-escaper's own `escape`, with the arguments `format` would give it, so the
// bytes sent are the same (test/sql-format.test.ts compares both over Orbit's statements); under
// the session's fixed sql_mode (db/session-setup.ts) those escapes mean what they say.
import mysql, { type SqlValue, type Timezone } from 'mysql2';

/** The literal pieces of one statement text around its `?` marks (pieces.length = marks + 1). */
type Shape = readonly string[];

/** Statement texts seen, with their pieces (null: a text this module leaves to `format`). Texts
 * differ by their IN-list and multi-row lengths, so there are a few hundred; bounded anyway. */
const shapes = new Map<string, Shape | null>();
const MAX_SHAPES = 1000;
/** Longer texts are formatted the slow way and not kept (they are rare: big multi-row INSERTs). */
const MAX_SHAPE_CHARS = 32_768;

/** The pieces of `sql`, from sql-escaper's own walk: every mark replaced by a unique marker, then
 * cut at the markers. Null for a text the shortcut does not take: an identifier mark `??`, a U+E000
 * (the markers' delimiter) or a text over MAX_SHAPE_CHARS. */
function shapeOf(sql: string): Shape | null {
  if (sql.length > MAX_SHAPE_CHARS || sql.includes('??') || sql.includes('\uE000')) return null;
  let marks = 0;
  for (let i = sql.indexOf('?'); i !== -1; i = sql.indexOf('?', i + 1)) marks++;
  const markers = Array.from({ length: marks }, (_, i) => ({ toSqlString: () => `\uE000${i}\uE000` }));
  const marked = mysql.format(sql, markers as unknown as SqlValue[]);
  const pieces = marked.split(/\uE000\d+\uE000/);
  // The markers come back in order, one per mark format replaced (a mark inside a string or a
  // comment is not one): check it rather than trust it.
  const seen = marked.match(/\uE000\d+\uE000/g) ?? [];
  return seen.every((m, i) => m === `\uE000${i}\uE000`) ? pieces : null;
}

function cachedShape(sql: string): Shape | null {
  let shape = shapes.get(sql);
  if (shape === undefined) {
    shape = shapeOf(sql);
    if (shapes.size >= MAX_SHAPES) shapes.clear();
    shapes.set(sql, shape);
  }
  return shape;
}

/** One value as `format` escapes it (sql-escaper 1.9: numbers as digits, other primitives and
 * non-expandable objects through escapeValue); undefined for a value it would expand (a plain
 * object or a Map: `SET ?` assignments), which the caller leaves to `format`. */
function escapedValue(v: unknown, stringifyObjects: boolean | undefined, timezone: Timezone | undefined): string | undefined {
  if (typeof v === 'number' || typeof v === 'bigint') return `${v}`;
  if (typeof v !== 'object' || v === null || stringifyObjects) return mysql.escape(v as SqlValue, stringifyObjects, timezone);
  if (Array.isArray(v) || v instanceof Uint8Array || v instanceof Date) return mysql.escape(v as SqlValue, true, timezone);
  return undefined;
}

/** formatSql(sql, values, …): exactly `mysql.format(sql, values, stringifyObjects, timezone)`. */
export function formatSql(sql: string, values: unknown, stringifyObjects?: boolean, timezone?: Timezone): string {
  if (values === undefined || values === null) return sql;
  // An empty list changes nothing (sql-escaper only walks the text; under the mode flags mysql2
  // passes — none — the walk cannot throw).
  if (Array.isArray(values) && values.length === 0) return sql;
  const slow = () => mysql.format(sql, values as SqlValue[], stringifyObjects, timezone);
  if (!Array.isArray(values)) return slow();
  const shape = cachedShape(sql);
  // A count other than the marks': format leaves extra marks as `?` or ignores extra values.
  if (shape === null || shape.length !== values.length + 1) return slow();
  let out = shape[0]!;
  for (let i = 0; i < values.length; i++) {
    const e = escapedValue(values[i], stringifyObjects, timezone);
    if (e === undefined) return slow();
    out += e + shape[i + 1]!;
  }
  return out;
}

/** mysql2's `queryFormat` hook (called with the connection as `this`): formatSql with the
 * connection's own options, as mysql2's default `format` would use them. */
export function queryFormat(this: { config: { stringifyObjects?: boolean } }, sql: string, values: unknown, timezone?: Timezone): string {
  return formatSql(sql, values, this.config.stringifyObjects, timezone);
}
