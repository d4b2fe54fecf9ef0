// Hostile inputs for the fuzz suites (test/fuzz-*.test.ts) as plain values: ids that cannot exist,
// awkward strings, numbers, wrong types and keys (the raw tokens fuzz-schema.ts's mutations insert),
// text that SQL escaping and text columns get wrong, bytes that are not UTF-8, and URL encoding of
// all of them for paths and query strings.
import fc from 'fast-check';

const HEX = '0123456789abcdef';
export const hex32 = fc.string({ unit: fc.constantFrom(...HEX), minLength: 32, maxLength: 32 });

/** Ids that are not 32 lowercase hex characters, so can never exist. */
export const BAD_IDS = [
  'é',
  '😀',
  '\u00a0nbsp',
  '中文字符',
  '\ud800',
  'a\udc00b',
  'é'.repeat(60),
  '😀'.repeat(16),
  '0123456789abcdef0123456789abcdef0', // 33
  '0123456789abcdef0123456789abcde', // 31
  '0123456789ABCDEF0123456789ABCDEF',
  '0123456789abcdef0123456789abcdé',
  ' 0123456789abcdef0123456789abcde',
  '0123456789abcdef0123456789abcde\n',
];

/** Multi-byte, astral, invisible and otherwise awkward strings, plus number spellings as strings. */
export const HOSTILE_STRINGS = [
  ...BAD_IDS,
  '😀'.repeat(40),
  '中'.repeat(100),
  'e\u0301',
  '\u202eevil',
  '\ufeff',
  '\u0000',
  '\udfff',
  '\ud83d',
  'NaN',
  'Infinity',
  '-0',
  '1e308',
  '',
  ' ',
  'x'.repeat(300),
  '😀'.repeat(70),
];

/** Raw JSON number spellings (JSON.parse turns 1e400 into Infinity, -0 stays -0). */
export const HOSTILE_NUMBERS = [
  '1e308',
  '-1e308',
  '1e400',
  '-1e400',
  '-0',
  '-0.0',
  '0',
  '-1',
  '1.5',
  '1E3',
  '1e-400',
  '5e-324',
  '2147483648',
  '-2147483649',
  '9007199254740993',
  '-9007199254740993',
  '18446744073709551616',
  '100000000000000000000000',
  '1025',
  '2592001',
];

export const WRONG_TYPES = ['null', 'true', 'false', '[]', '{}', '[null]', '{"a":{"b":[1]}}', '"1"', '[[[[["é"]]]]]', '{"😀":"😀"}'];

export const HOSTILE_KEYS = [
  'é'.repeat(60),
  '😀'.repeat(40),
  'é',
  '😀',
  '中文',
  '\ud800',
  '',
  ' ',
  '__proto__',
  'constructor',
  'type\u0000',
  'TYPE',
  '\u00a0',
  'x'.repeat(200),
];

// ---- stored text ------------------------------------------------------------------------------

/** What SQL escaping and text columns get wrong: quotes, every backslash combination mysql2's
 * escaping writes, injection shapes, NUL, Ctrl-Z, line separators, LIKE wildcards, 2-4 byte UTF-8. */
export const SQL_HOSTILE_TOKENS = [
  "'",
  '"',
  '\\',
  "\\'",
  '\\\\',
  "\\\\'",
  '\\"',
  "''",
  "'); DELETE FROM tasks; --",
  "\\'); DROP TABLE queues; #",
  '/*',
  '*/',
  ';',
  '\u0000',
  '\\0',
  '\u001a',
  '\\Z',
  '\n',
  '\r',
  '\t',
  '\u2028',
  '%',
  '_',
  'é',
  'e\u0301',
  '中文',
  '😀',
  '\u{10ffff}',
  '\ufeff',
];

/** Well-formed text of 0..maxTokens tokens: hostile tokens mixed with any code point. */
export function storedText(minTokens: number, maxTokens: number): fc.Arbitrary<string> {
  const token = fc.oneof(
    { arbitrary: fc.constantFrom(...SQL_HOSTILE_TOKENS), weight: 3 },
    { arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 2 }), weight: 1 },
    { arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 3 }), weight: 1 },
  );
  return fc
    .array(token, { minLength: minTokens, maxLength: maxTokens })
    .map((t) => t.join(''))
    .filter((s) => s.isWellFormed());
}

/** Percent-encodes every code point outside the unreserved set as UTF-8 (a lone surrogate as the
 * three bytes WTF-8 gives it, which no decoder accepts). */
export function enc(s: string): string {
  let out = '';
  for (const ch of s) {
    if (/^[A-Za-z0-9_.~-]$/.test(ch)) out += ch;
    else if (ch.isWellFormed()) out += [...Buffer.from(ch, 'utf8')].map((b) => '%' + b.toString(16).toUpperCase().padStart(2, '0')).join('');
    else {
      const c = ch.charCodeAt(0);
      out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => '%' + b.toString(16).toUpperCase()).join('');
    }
  }
  return out;
}

/** Byte sequences that are not UTF-8: lone continuation, truncated, overlong, encoded surrogate, 0xFF. */
export const BAD_UTF8 = [[0x80], [0xc3], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xff], [0xf4, 0x90, 0x80, 0x80]];

/** An id for a path or body: one of the real ids, a well-formed id that cannot exist, or not an id
 * at all (BAD_IDS), with the given weights. */
export const idArb = (realIds: string[], weights: { real: number; bad: number } = { real: 3, bad: 3 }): fc.Arbitrary<string> =>
  fc.oneof(
    ...(realIds.length ? [{ arbitrary: fc.constantFrom(...realIds), weight: weights.real }] : []),
    { arbitrary: hex32, weight: 1 },
    { arbitrary: fc.constantFrom(...BAD_IDS), weight: weights.bad },
  );
