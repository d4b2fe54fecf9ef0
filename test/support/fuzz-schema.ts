// Generators for the fuzz suites (test/fuzz-*.test.ts) derived from a TypeBox schema: a valid-value
// arbitrary, hostile mutations of it as raw JSON text (which can hold what a JS value cannot:
// duplicate keys, -0, 1e400, lone surrogate escapes, nesting past any recursion limit), and the
// oracle that says whether a text conforms to a schema. The hostile tokens are in fuzz-hostile.ts.
import fc from 'fast-check';
import { Kind, OptionalKind, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { HOSTILE_KEYS, HOSTILE_NUMBERS, HOSTILE_STRINGS, WRONG_TYPES } from './fuzz-hostile.js';

/** Per-field value arbitraries (by property name) that replace the schema-derived ones, e.g. ids. */
export type Overrides = Record<string, fc.Arbitrary<unknown>>;

const CHARS = fc.oneof(
  { arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }), weight: 4 },
  fc.constantFrom('é', '😀', '中', 'ß', '\u00a0', '\u200b', 'Ω'),
);
/** Text mixing ASCII with 2-, 3- and 4-byte UTF-8 characters. */
const text = (minLength: number, maxLength: number) => fc.string({ unit: CHARS, minLength, maxLength });

/** An arbitrary of values that conform to `schema`. Kinds: Object, String, Integer, Number,
 * Boolean, Literal, Union, Array, Unknown (Optional properties may be absent). */
export function validArb(schema: TSchema, over: Overrides = {}): fc.Arbitrary<unknown> {
  const s = schema as TSchema & Record<string, any>;
  switch (s[Kind]) {
    case 'Object': {
      const props: Record<string, fc.Arbitrary<unknown>> = {};
      const required: string[] = [];
      for (const [k, p] of Object.entries(s.properties as Record<string, TSchema>)) {
        props[k] = over[k] ?? validArb(p, over);
        if ((p as unknown as Record<symbol, unknown>)[OptionalKind] !== 'Optional') required.push(k);
      }
      return fc.record(props, { requiredKeys: required });
    }
    case 'String': {
      if (s.pattern) return fc.stringMatching(new RegExp(s.pattern));
      const max: number = s.maxLength ?? 40;
      return text(s.minLength ?? 0, Math.min(max, 40)).filter((x) => x.length >= (s.minLength ?? 0) && x.length <= max);
    }
    case 'Integer':
      return fc.integer({ min: s.minimum ?? -1_000_000, max: s.maximum ?? 1_000_000 });
    case 'Number':
      return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case 'Boolean':
      return fc.boolean();
    case 'Literal':
      return fc.constant(s.const);
    case 'Union':
      return fc.oneof(...(s.anyOf as TSchema[]).map((x) => validArb(x, over)));
    case 'Array': {
      const item = validArb(s.items as TSchema, over);
      const minLength: number = s.minItems ?? 0;
      const maxLength = Math.max(minLength, Math.min(s.maxItems ?? 4, 4));
      return s.uniqueItems ? fc.uniqueArray(item, { minLength, maxLength, selector: (v) => JSON.stringify(v) }) : fc.array(item, { minLength, maxLength });
    }
    case 'Unknown':
      return fc.oneof(fc.jsonValue({ maxDepth: 3, stringUnit: 'binary' }), fc.dictionary(text(1, 8), text(0, 12), { maxKeys: 4 }));
    default:
      throw new Error(`fuzz-schema: unsupported schema kind ${String(s[Kind])}`);
  }
}

// ---- raw JSON text trees ----------------------------------------------------------------------

/** A JSON text tree: objects are entry lists (so keys may repeat), leaves are raw text. */
export type JNode = { raw: string } | { obj: [string, JNode][] } | { arr: JNode[] };

export function toNode(v: unknown): JNode {
  if (Array.isArray(v)) return { arr: v.map(toNode) };
  if (v !== null && typeof v === 'object')
    return {
      obj: Object.entries(v)
        .filter(([, x]) => x !== undefined)
        .map(([k, x]) => [k, toNode(x)]),
    };
  return { raw: JSON.stringify(v) ?? 'null' };
}

export function serialize(n: JNode): string {
  if ('raw' in n) return n.raw;
  if ('arr' in n) return '[' + n.arr.map(serialize).join(',') + ']';
  return '{' + n.obj.map(([k, v]) => JSON.stringify(k) + ':' + serialize(v)).join(',') + '}';
}

/** Rebuilds `root`, calling `fn` on every node (preorder) with its index; fn returns a replacement or undefined. */
function mapNodes(root: JNode, fn: (n: JNode, i: number) => JNode | undefined): JNode {
  let i = 0;
  const walk = (n: JNode): JNode => {
    const r = fn(n, i++);
    if (r) return r;
    if ('arr' in n) return { arr: n.arr.map(walk) };
    if ('obj' in n) return { obj: n.obj.map(([k, v]) => [k, walk(v)] as [string, JNode]) };
    return n;
  };
  return walk(root);
}

function count(root: JNode, pred: (n: JNode) => boolean): number {
  let c = 0;
  mapNodes(root, (n) => (pred(n) && c++, undefined));
  return c;
}

/** Replaces the entry list of the k-th object (preorder). */
function mapObject(root: JNode, k: number, fn: (entries: [string, JNode][]) => [string, JNode][]): JNode {
  let j = 0;
  return mapNodes(root, (n) => ('obj' in n && j++ === k ? { obj: fn(n.obj) } : undefined));
}

const str = (s: string) => JSON.stringify(s);
/** A hostile raw JSON token: strings, numbers, wrong types, random code points and doubles. */
export const hostileToken: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...HOSTILE_STRINGS.map(str)), weight: 4 },
  { arbitrary: fc.constantFrom(...HOSTILE_NUMBERS), weight: 3 },
  { arbitrary: fc.constantFrom(...WRONG_TYPES), weight: 2 },
  fc.string({ unit: 'binary', maxLength: 12 }).map(str),
  fc.double().map((d) => JSON.stringify(d)),
);
const hostileKey = fc.oneof({ arbitrary: fc.constantFrom(...HOSTILE_KEYS), weight: 3 }, fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }));

export interface Mutant {
  text: string;
  /** What was done, for failure reports. */
  how: string;
}

const wrap = (d: number, objects: boolean, inner: string) => (objects ? '{"é":'.repeat(d) + inner + '}'.repeat(d) : '['.repeat(d) + inner + ']'.repeat(d));

const renameAll = (n: JNode, sfx: string): JNode =>
  'arr' in n ? { arr: n.arr.map((x) => renameAll(x, sfx)) } : 'obj' in n ? { obj: n.obj.map(([k, v]) => [k + sfx, renameAll(v, sfx)] as [string, JNode]) } : n;

/** One hostile mutation of a valid value (the result may still conform; the oracle decides). */
export function mutantArb(value: unknown): fc.Arbitrary<Mutant> {
  const root = toNode(value);
  const nodes = count(root, () => true);
  const objs = count(root, (n) => 'obj' in n);
  const m = (how: string, n: JNode): Mutant => ({ text: serialize(n), how });
  const ops: fc.Arbitrary<Mutant>[] = [
    fc.tuple(fc.nat(nodes - 1), hostileToken).map(([i, t]) =>
      m(
        `node ${i} := ${t.slice(0, 60)}`,
        mapNodes(root, (_, j) => (j === i ? { raw: t } : undefined)),
      ),
    ),
    fc.tuple(fc.nat(nodes - 1), fc.constantFrom(510, 511, 512, 513, 600, 20_000), fc.boolean()).map(([i, d, o]) =>
      m(
        `node ${i} nested ${d} ${o ? 'objects' : 'arrays'} deeper`,
        mapNodes(root, (n, j) => (j === i ? { raw: wrap(d, o, serialize(n)) } : undefined)),
      ),
    ),
    // Every string value and key gets multi-byte and astral characters.
    fc.constantFrom('é', '😀', '中文', '\ud800').map((sfx) =>
      m(
        `every string value +${str(sfx)}`,
        mapNodes(root, (n) => ('raw' in n && n.raw.startsWith('"') ? { raw: str(JSON.parse(n.raw) + sfx) } : undefined)),
      ),
    ),
    fc.constant(m('the whole value nested 600 levels deeper', { raw: wrap(600, false, serialize(root)) })),
    fc.constantFrom('[]', 'null', '"x"', '42', '{', '{"a":1,}', '{}{}', '{"a":1}x', "{'a':1}", 'NaN', '-0').map((t) => m(`whole text := ${t}`, { raw: t })),
  ];
  if (objs > 0) {
    const entryPick = fc.nat(objs - 1).chain((k) => {
      let len = 0;
      mapObject(root, k, (e) => ((len = e.length), e));
      return len === 0 ? fc.constant(null) : fc.tuple(fc.constant(k), fc.nat(len - 1));
    });
    ops.push(
      fc.constantFrom('é', '😀', '中文', '\ud800').map((sfx) => m(`every key +${str(sfx)}`, renameAll(root, sfx))),
      fc.tuple(fc.nat(objs - 1), hostileKey, hostileToken).map(([k, key, t]) =>
        m(
          `object ${k} += ${str(key)}: ${t.slice(0, 40)}`,
          mapObject(root, k, (e) => [...e, [key, { raw: t }]]),
        ),
      ),
      fc.tuple(entryPick, hostileKey).map(([p, key]) =>
        p
          ? m(
              `object ${p[0]} key ${p[1]} renamed ${str(key)}`,
              mapObject(root, p[0], (e) => e.map((x, i) => (i === p[1] ? [key, x[1]] : x))),
            )
          : m('unchanged', root),
      ),
      fc.tuple(entryPick, hostileToken, fc.boolean()).map(([p, t, after]) =>
        p
          ? m(
              `object ${p[0]} key ${p[1]} duplicated ${after ? 'after' : 'before'} with ${t.slice(0, 40)}`,
              mapObject(root, p[0], (e) => {
                const dup: [string, JNode] = [e[p[1]]![0], { raw: t }];
                return after ? [...e, dup] : [dup, ...e];
              }),
            )
          : m('unchanged', root),
      ),
      entryPick.map((p) =>
        p
          ? m(
              `object ${p[0]} key ${p[1]} removed`,
              mapObject(root, p[0], (e) => e.filter((_, i) => i !== p[1])),
            )
          : m('unchanged', root),
      ),
    );
  }
  return fc.oneof(...ops);
}

// ---- oracle -----------------------------------------------------------------------------------

const compiledChecks = new Map<TSchema, TypeCheck<TSchema>>();
function checker(schema: TSchema): TypeCheck<TSchema> {
  let c = compiledChecks.get(schema);
  if (!c) compiledChecks.set(schema, (c = TypeCompiler.Compile(schema)));
  return c;
}

/** Deepest object/array nesting (the value itself is level 1), without recursion. */
export function depthOf(root: unknown): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    max = Math.max(max, d);
    for (const c of Array.isArray(v) ? v : Object.values(v as object)) stack.push([c, d + 1]);
  }
  return max;
}

/** The documented nesting limit of bodies and frames. */
export const MAX_DEPTH = 512;

export type Verdict = { ok: true; value: any } | { ok: false; why: string };

/** Parses `text` as the server does and checks it against the schema `pick` chooses for it. */
export function judge(text: string, pick: (v: Record<string, unknown>) => TSchema | string): Verdict {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { ok: false, why: 'not JSON' };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return { ok: false, why: 'not an object' };
  if (depthOf(v) > MAX_DEPTH) return { ok: false, why: `nested deeper than ${MAX_DEPTH}` };
  const schema = pick(v as Record<string, unknown>);
  if (typeof schema === 'string') return { ok: false, why: schema };
  const why = violation(v, schema);
  return why ? { ok: false, why } : { ok: true, value: v };
}

/** Why a parsed value does not conform to `schema`, or null. */
export function violation(v: unknown, schema: TSchema): string | null {
  const c = checker(schema);
  if (c.Check(v)) return null;
  const e = c.Errors(v).First();
  return `schema: ${e ? `${e.path} ${e.message}` : 'invalid'}`;
}

/** True when `s` is a string that could be an id (32 lowercase hex). */
export const isId = (s: unknown): boolean => typeof s === 'string' && /^[0-9a-f]{32}$/.test(s);
