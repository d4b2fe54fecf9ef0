// JsonText (server/db/sql-format.ts): a JSON text as a statement value, escaped for what a JSON
// text can hold. It must be the literal mysql2's own escaping writes, less the needless `\"`.
import mysql from 'mysql2';
import { describe, expect, it } from 'vitest';
import { JsonText, formatSql } from '../server/db/sql-format.js';

const values: unknown[] = [
  { task: { id: 'abc', payload: { i: 1 } }, deduplicated: false },
  "it's",
  'back\\slash and \\" and \\\\',
  'controls \u0000 \b \t \n \r \u001a \u001f end',
  'quotes " \' ` and ünïcödé 𝄞 \u2028',
  { nested: ["'", '\\', '"', "\\'", null, 1.5, true] },
  '',
  [],
];

describe('JsonText', () => {
  it.each(values.map((v) => [JSON.stringify(v)]))('writes %s as mysql2 would, without escaping "', (json) => {
    const ours = new JsonText(json).toSqlString();
    // mysql2 (sql-escaper) also escapes `"` as `\"`; with that undone the literals are the same.
    expect(ours).toBe(mysql.escape(json).replace(/\\"/g, '"'));
    // Nothing that needs escaping is left raw: no control character, no unescaped quote.
    const inner = ours.slice(1, -1);
    expect([...inner].some((ch) => ch.charCodeAt(0) < 0x20)).toBe(false);
    expect(inner).not.toMatch(/(^|[^\\])(\\\\)*'/);
  });

  it('is formatted into a statement through its toSqlString', () => {
    const json = JSON.stringify({ a: "o'k" });
    expect(formatSql('INSERT INTO t VALUES (?, ?)', [new JsonText(json), 1])).toBe(`INSERT INTO t VALUES ('{"a":"o\\'k"}', 1)`);
  });
});
