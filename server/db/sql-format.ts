// mysql2 walks an already-formatted text again with an empty value list; queryFormat skips that.
import mysql, { type SqlValue, type Timezone } from 'mysql2';

/** JSON text as a statement value: JSON.stringify escapes control characters, so only `\` and
 * `'` need escaping, not every `"`. */
export class JsonText {
  constructor(readonly json: string) {}
  toSqlString(): string {
    const j = this.json;
    return j.indexOf('\\') < 0 && j.indexOf("'") < 0 ? `'${j}'` : `'${j.replace(/[\\']/g, '\\$&')}'`;
  }
}

export function formatSql(sql: string, values: unknown, stringifyObjects?: boolean, timezone?: Timezone): string {
  if (values === undefined || values === null || (Array.isArray(values) && values.length === 0)) return sql;
  return mysql.format(sql, values as SqlValue[], stringifyObjects, timezone);
}

export function queryFormat(this: { config: { stringifyObjects?: boolean } }, sql: string, values: unknown, timezone?: Timezone): string {
  return formatSql(sql, values, this.config.stringifyObjects, timezone);
}
