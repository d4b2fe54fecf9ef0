// Property: every string Orbit stores comes back byte-exact. Generated payload
// strings and object keys, concurrency keys, business keys, outputs, error codes and messages —
// quotes, backslash combinations, injection shapes, NUL, Ctrl-Z, 2-4 byte UTF-8 mixed with any
// code point (support/fuzz-hostile.ts, storedText) — go in over HTTP and a raw worker's result
// frames, and must come out equal in the submit answer, the task.assign frame, GET /v1/tasks/{id},
// GET …/attempts, the key filters of GET /v1/tasks, and as bytes in the database columns.
//
// Seeded: ORBIT_FUZZ_SEED (default in support/fuzz-harness.ts), ORBIT_FUZZ_RUNS for more runs.
import { describe, expect, it, onTestFinished } from 'vitest';
import fc from 'fast-check';
import type { RowDataPacket } from 'mysql2/promise';
import { KEY_MAX_CODE_POINTS } from '../protocol/limits.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { hello, openRaw, type RawWorker } from './support/raw-worker.js';
import { storedText } from './support/fuzz-hostile.js';
import { fcParams, fuzzTimeout } from './support/fuzz-harness.js';

const BATCH = 6;
const f = useGatewayFixture();

/** At most `max` code points, no trailing White_Space (a key rule) and, for concurrency keys, no
 * control characters: what the generated text is shaped into before it is submitted. */
function shape(s: string, max: number, noCc: boolean): string {
  const t = noCc ? s.replace(/\p{Cc}/gu, '') : s;
  return [...t]
    .slice(0, max)
    .join('')
    .replace(/\p{White_Space}+$/u, '');
}

const item = fc.record({
  strings: fc.array(storedText(0, 10), { maxLength: 4 }),
  dict: fc.dictionary(storedText(1, 4), storedText(0, 6), { maxKeys: 3 }),
  ckey: storedText(1, 12),
  bkey: storedText(1, 12),
  succeed: fc.boolean(),
  output: fc.record({ s: fc.array(storedText(0, 8), { maxLength: 3 }), v: fc.jsonValue({ maxDepth: 2, stringUnit: 'grapheme' }) }),
  code: storedText(1, 5),
  message: storedText(0, 40),
});
type Item = typeof item extends fc.Arbitrary<infer T> ? T : never;

/** The value as JSON carries it (-0 → 0, undefined dropped): what a faithful round trip returns. */
const j = (v: unknown): unknown => JSON.parse(JSON.stringify(v));
const hex = (s: string) => Buffer.from(s, 'utf8').toString('hex').toUpperCase();

let batchNo = 0;
async function roundTrip(w: RawWorker, items: Item[]): Promise<void> {
  const b = ++batchNo;
  const { url } = f.gw;
  const { token, queue_id } = f.t;
  // The prefix keeps the batch's keys distinct, so no task waits for another's permit.
  const cases = items.map((x, i) => ({
    x,
    payload: { strings: x.strings, dict: x.dict },
    ckey: shape(`${b}.${i}|${x.ckey}`, KEY_MAX_CODE_POINTS, true),
    bkey: shape(`${b}.${i}|${x.bkey}`, KEY_MAX_CODE_POINTS, false),
    error: { code: shape(x.code, 60, false) || 'E', message: x.message },
    id: '',
  }));
  await Promise.all(
    cases.map(async (c) => {
      const body = { queue_id, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: c.payload, concurrency_key: c.ckey, business_key: c.bkey };
      const r = await call(url, 'POST', '/v1/tasks', { token, key: ikey('rt'), body });
      expect(r.status, r.text).toBe(201);
      expect(r.body.data.task).toMatchObject({ payload: j(c.payload), concurrency_key: c.ckey, business_key: c.bkey });
      c.id = r.body.data.task.id;
    }),
  );
  const byId = new Map(cases.map((c) => [c.id, c]));
  for (let k = 0; k < cases.length; k++) {
    const a = await w.next('task.assign');
    const c = byId.get(a.task.id)!;
    expect(a.task).toMatchObject({ payload: j(c.payload), concurrency_key: c.ckey, business_key: c.bkey });
    w.send({ type: 'start', attempt_id: a.attempt_id });
    await w.next('start.ok');
    w.send({
      type: 'result',
      attempt_id: a.attempt_id,
      ...(c.x.succeed ? { outcome: 'succeeded', output: c.x.output } : { outcome: 'failed', error: c.error }),
    });
    expect(await w.next('result.ok')).toMatchObject({ attempt_id: a.attempt_id, deduplicated: false });
  }
  for (const c of cases) {
    const t = await call(url, 'GET', `/v1/tasks/${c.id}`, { token });
    expect(t.status, t.text).toBe(200);
    const task = t.body.data.task;
    expect(task).toMatchObject({ payload: j(c.payload), concurrency_key: c.ckey, business_key: c.bkey });
    expect(task.result).toMatchObject(c.x.succeed ? { outcome: 'succeeded', output: j(c.x.output) } : { outcome: 'failed', error: c.error });
    const at = await call(url, 'GET', `/v1/tasks/${c.id}/attempts`, { token });
    expect(at.body.data.attempts.map((x: any) => x.error)).toEqual([c.x.succeed ? null : c.error]);
    for (const [param, v] of [
      ['concurrency_key', c.ckey],
      ['business_key', c.bkey],
    ] as const) {
      const l = await call(url, 'GET', `/v1/tasks?queue_id=${queue_id}&${param}=${encodeURIComponent(v)}`, { token });
      expect(l.status, l.text).toBe(200);
      expect(l.body.data.tasks.map((x: any) => x.id)).toEqual([c.id]);
    }
  }
  // And as bytes where they are stored: the keys exactly, the payload as the JSON submitted.
  const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT id, HEX(concurrency_key) AS ck, HEX(business_key) AS bk, payload FROM tasks WHERE id IN (?)', [
    cases.map((c) => c.id),
  ]);
  for (const r of rows) {
    const c = byId.get(r.id as string)!;
    expect({ ck: r.ck, bk: r.bk, payload: JSON.parse(r.payload as string) }).toEqual({ ck: hex(c.ckey), bk: hex(c.bkey), payload: j(c.payload) });
  }
}

describe('stored strings round-trip (fuzz)', () => {
  it(
    'payload strings and keys, concurrency and business keys, outputs, error codes and messages come back byte-exact',
    { timeout: fuzzTimeout(12, 500) },
    async () => {
      const w = await openRaw(f.gw.url, f.t.token);
      onTestFinished(() => w.close());
      w.send(hello([f.t.queue_id], { capacity: BATCH, concurrency_keys: true }));
      await w.next('hello.ok');
      await fc.assert(
        fc.asyncProperty(fc.array(item, { minLength: BATCH, maxLength: BATCH }), (items) => roundTrip(w, items)),
        fcParams(12),
      );
    },
  );
});
