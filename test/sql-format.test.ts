// db/sql-format.ts is the pool's queryFormat: the bytes must be the ones mysql2's own `format`
// (sql-escaper) writes, for every value and every text — also texts whose `?` sit in strings,
// identifiers and comments, and calls whose value count does not match the marks — and a text with
// no values must go as it is, whatever it holds (the pipeline's formatted texts). Compared on
// Orbit's own statement builders' shapes and on hand-made edge cases. What the texts mean on a
// server whose default sql_mode is hostile: test/db-sql-mode.test.ts (real MariaDB, every pooled
// connection formats through this module).
import { describe, expect, it } from 'vitest';
import mysql, { type SqlValue } from 'mysql2';
import { formatSql } from '../server/db/sql-format.js';
import { placeholderRows, placeholders } from '../server/db/placeholders.js';

const STRINGS = [
  '',
  'plain',
  "o'clock",
  'a\\b',
  "\\'",
  '"dq"',
  '?',
  '??',
  '-- not a comment',
  '/* x */',
  'nul\u0000byte',
  'ctrl-z\u001a',
  'line\nbreak\r\ttab',
  'héllo wörld ✓ 🚀',
  '\u2028\u2029',
  "'); DROP TABLE tasks; --",
];

const VALUES: unknown[] = [
  ...STRINGS,
  0,
  -1.5,
  2 ** 53,
  12345678901234567890n,
  Number.NaN,
  true,
  false,
  null,
  undefined,
  Buffer.from([0, 1, 0x27, 0x5c, 0xff]),
  new Uint8Array([1, 2, 3]),
  new Date(Date.UTC(2026, 11, 3, 8, 15, 30, 123)),
  ['a', "b'", 3, null],
  [
    [1, 'x'],
    [2, 'y'],
  ],
  { toSqlString: () => 'NOW(3)' },
  { a: 1, "b'": 'c' },
  new Map([['k', 'v']]),
];

const TEXTS = [
  'SELECT ?',
  'SELECT ?, ?, ?',
  `SELECT id FROM attempts WHERE id IN (${placeholders(5)}) AND namespace_id IN (${placeholders(2)}) FOR UPDATE`,
  `INSERT INTO receipts (a, b, c) VALUES ${placeholderRows(4, '(?, ?, ?)')}`,
  `UPDATE tasks SET state = CASE id ${Array.from({ length: 3 }, () => 'WHEN ? THEN ?').join(' ')} END, updated_at = ? WHERE id IN (${placeholders(3)})`,
  "SELECT '?' AS q, ? AS v",
  "SELECT 'it''s ?', \"dq ? \\\" ?\", ?",
  "SELECT 'a\\'?', ?",
  'SELECT `col?`, ? FROM t',
  'SELECT ? -- trailing ? comment\n, ?',
  'SELECT ? # hash ? comment\n, ?',
  'SELECT /* block ? */ ?, ?',
  'SELECT /*! versioned ? */ ?',
  'SELECT ???, ?',
  'SELECT ??, ? FROM t',
  'UPDATE t SET ? WHERE id = ?',
  'SELECT 1',
  'SELECT ?\u0000, ?',
];

describe('formatSql', () => {
  it('writes the bytes mysql2 writes, for every value in every position', () => {
    let compared = 0;
    for (const sql of TEXTS) {
      const marks = (sql.match(/\?/g) ?? []).length;
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < VALUES.length; i++) {
          const values = Array.from({ length: marks }, (_, j) => VALUES[(i + j * 7 + round) % VALUES.length]);
          expect(formatSql(sql, values, false, 'Z')).toBe(mysql.format(sql, values as SqlValue[], false, 'Z'));
          compared++;
        }
      }
    }
    expect(compared).toBe(TEXTS.length * 2 * VALUES.length);
  });

  it('matches mysql2 when the value count differs from the marks, and for a single non-array value', () => {
    for (const sql of ['SELECT ?, ?, ?', "SELECT '?', ?, ?", 'SELECT ? -- ?\n, ?']) {
      for (const values of [[1], [1, 'b'], [1, 'b', "c'", 'extra'], [null, undefined, 3, 4, 5]]) {
        expect(formatSql(sql, values, false, 'Z')).toBe(mysql.format(sql, values as SqlValue[], false, 'Z'));
      }
      expect(formatSql(sql, "x'y", false, 'Z')).toBe(mysql.format(sql, "x'y", false, 'Z'));
    }
  });

  it('leaves a text without values as it is, and honours stringifyObjects and the time zone', () => {
    const sql = "SELECT 'it\\'s', ?, ? -- ?";
    for (const text of [sql, ...TEXTS, mysql.format(TEXTS[6]!, ["it's ? \\", 'x'])]) {
      for (const none of [[], undefined, null]) {
        expect(formatSql(text, none)).toBe(text);
        expect(formatSql(text, none)).toBe(mysql.format(text, none as unknown as SqlValue[]));
      }
    }
    const date = new Date(Date.UTC(2026, 0, 1, 0, 0, 0));
    for (const [so, tz] of [
      [true, 'Z'],
      [false, '+02:00'],
      [undefined, 'local'],
    ] as const) {
      const values = [{ a: "b'" }, date];
      expect(formatSql(sql, values, so, tz)).toBe(mysql.format(sql, values as SqlValue[], so, tz));
    }
  });
});
