// Property-based fuzzing of the worker gateway's WebSocket endpoint against a real gateway process
// and MariaDB. Frames are generated from the TypeBox schemas of protocol/frames.ts (WORKER_FRAMES)
// and mutated (multi-byte and astral strings in values and keys, lone surrogates, huge/negative
// numbers, -0, nesting past 512 levels, duplicate keys, unknown fields, wrong types, ids that are
// not 32 lowercase hex in attempt_id/attempt_ids/queues/resume), sent as the first frame and after
// hello; plus transport-level input (invalid UTF-8 text frames over a raw socket, binary frames,
// frames over max_frame_bytes and over twice it). For every case: no 1011 and no dropped socket;
// a refusal is one `error` frame with a documented code and then that code's close (a protocol
// error: PROTOCOL_ERROR, then 1002 — 1009 for size, 1003 for binary); a frame the schema accepts
// gets its documented reply; nothing but the session rows changes in the database; the process
// is alive and serves a normal worker at the end. A fatal case gets its own connection; non-fatal
// ones share a few connections.
//
// How an answer is checked: support/fuzz-frame-check.ts. Seeded: ORBIT_FUZZ_SEED (default in
// support/fuzz-harness.ts), ORBIT_FUZZ_RUNS for more runs.
import crypto from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { RowDataPacket } from 'mysql2/promise';
import { WORKER_FRAMES } from '../protocol/frames.js';
import { taskBody } from './support/contract.js';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { hello } from './support/raw-worker.js';
import { mutantArb, validArb, type Overrides } from './support/fuzz-schema.js';
import { BAD_IDS, hex32 } from './support/fuzz-hostile.js';
import { dbDiff, dbState, fcParams, FuzzLog, FuzzTarget, fuzzBudget, fuzzTimeout, noInternalErrors, noOpenSessions, show } from './support/fuzz-harness.js';
import { rawPeer, wsPeer, type Peer } from './support/fuzz-ws.js';
import { documentedOutcome, protocolError, type Expect, type FrameCase, type Phase } from './support/fuzz-frame-outcome.js';
import { check, replies, seen, stillOpen, type Stats } from './support/fuzz-frame-check.js';

const MAX_FRAME = 300 * 1024;
const ENV = { ORBIT_MAX_FRAME_BYTES: String(MAX_FRAME) };
const BATCH = 25;
const CONCURRENCY = 8;
const LANES = 3;
const f = useGatewayFixture({ gatewayEnv: ENV });
let target: FuzzTarget;
let queue = '';
beforeAll(() => {
  target = new FuzzTarget(f, ENV);
  queue = f.t.queue_id;
});

const expectFor = (phase: Phase, text: string) => documentedOutcome(phase, text, { maxFrame: MAX_FRAME, queue });

let workers = 0;
/** A session after hello.ok (capacity 0, on a queue that never has tasks). */
async function session(raw = false): Promise<Peer> {
  const p = await (raw ? rawPeer : wsPeer)(target.url, f.t.token);
  p.send(JSON.stringify(hello([queue], { worker_id: `fz-${process.pid}-${++workers}`, capacity: 0 })));
  await p.until((i) => i.length > 0);
  if (p.inbox[0]?.type !== 'hello.ok') {
    await p.end();
    throw new Error(`a plain hello was refused: ${seen(p)}`);
  }
  return p;
}

type Unit = { solo: FrameCase } | { lane: FrameCase[] };

async function runUnit(u: Unit, stats: Stats): Promise<string | null> {
  if ('solo' in u) {
    const c = u.solo;
    const p = c.phase === 'pre' ? await (c.raw ? rawPeer : wsPeer)(target.url, f.t.token) : await session(c.raw);
    if (c.phase === 'post') stats.sessions++;
    try {
      const r = await check(p, c, stats);
      // A non-fatal reply (an orFatal case can get either) leaves the session open.
      const nonFatal = c.expect.kind === 'silent' || (c.expect.kind === 'reply' && !replies(p).some((m) => m.type === 'error' && m.fatal));
      return r ?? (c.phase === 'post' && nonFatal ? await stillOpen(p, 'after a non-fatal reply') : null);
    } finally {
      await p.end();
    }
  }
  // A lane holds only non-fatal cases: its session must stay open from the first to the last
  // (checked between cases, and by a round trip after the last one).
  const out: string[] = [];
  let p: Peer | null = null;
  let prev: FrameCase | null = null;
  const closedAfter = (c: FrameCase) => `socket closed after a non-fatal case; got ${seen(p!)}\n    input: ${show(c.data)}`;
  for (const c of u.lane) {
    if (p?.closed && prev) out.push(closedAfter(prev));
    if (!p || p.closed) {
      await p?.end();
      p = await session();
      stats.sessions++;
    }
    const r = await check(p, c, stats);
    if (r) out.push(`${r}\n    input: ${show(c.data)}`);
    prev = r ? null : c; // a failed case is reported already
  }
  if (p && prev && (await stillOpen(p, 'after the last case of the lane'))) out.push(closedAfter(prev));
  await (p as Peer | null)?.end();
  return out.length ? out.join('\n- ') : null;
}

const STATIC_TABLES = ['tasks', 'attempts', 'receipts', 'queues', 'subscriptions', 'resource_keys', 'deliveries'];

/** Fatal (or possibly fatal) cases on their own connection, the rest shared by LANES connections;
 * then the database: only session rows, exactly one per session that got hello.ok. */
async function runCases(log: FuzzLog, cases: FrameCase[]): Promise<void> {
  const shared = cases.filter((c) => c.phase === 'post' && !c.raw && (c.expect.kind === 'silent' || (c.expect.kind === 'reply' && !c.expect.orFatal)));
  const lanes = Array.from({ length: LANES }, (_, i) => shared.filter((_, j) => j % LANES === i)).filter((l) => l.length > 0);
  const units: Unit[] = [...cases.filter((c) => !shared.includes(c)).map((solo) => ({ solo })), ...lanes.map((lane) => ({ lane }))];
  const stats: Stats = { helloOk: 0, sessions: 0, replied: 0 };
  const before = await dbState(f.db.pool, [...STATIC_TABLES, 'worker_sessions']);
  const ok = await log.batch(
    units,
    CONCURRENCY,
    (u) => runUnit(u, stats),
    (u) => ('solo' in u ? u.solo.data : null),
    cases.length,
  );
  log.accepted += stats.helloOk + stats.replied;
  if (!ok) return;
  const after = await dbState(f.db.pool, [...STATIC_TABLES, 'worker_sessions']);
  const diff = [
    ...dbDiff(before, after, Object.fromEntries(STATIC_TABLES.map((t) => [t, 0]))),
    ...dbDiff(before, after, { worker_sessions: stats.helloOk + stats.sessions }),
  ];
  for (const t of STATIC_TABLES) if (before.sums[t] !== after.sums[t]) diff.push(`${t}: content changed`);
  if (diff.length) log.fail(`database changed by a batch of frames: ${diff.join('; ')}`);
}

function frameArb(phase: Phase): fc.Arbitrary<FrameCase> {
  const id = fc.oneof({ arbitrary: hex32, weight: 2 }, { arbitrary: fc.constantFrom(...BAD_IDS), weight: 3 });
  const over: Overrides = {
    attempt_id: id,
    attempt_ids: fc.array(id, { minLength: 1, maxLength: 3 }),
    queues: fc.array(fc.oneof({ arbitrary: fc.constant(queue), weight: 4 }, id), { minLength: 1, maxLength: 2 }),
    resume: fc.array(id, { maxLength: 3 }),
  };
  const types = Object.keys(WORKER_FRAMES) as (keyof typeof WORKER_FRAMES)[];
  const type = phase === 'pre' ? fc.oneof({ arbitrary: fc.constant('hello' as const), weight: 3 }, fc.constantFrom(...types)) : fc.constantFrom(...types);
  return type
    .chain((t) => validArb(WORKER_FRAMES[t], over))
    .chain((v) => fc.oneof({ arbitrary: fc.constant({ text: JSON.stringify(v), how: 'valid' }), weight: 1 }, { arbitrary: mutantArb(v), weight: 3 }))
    .map(({ text, how }) => ({ phase, data: text, how, expect: expectFor(phase, text) }));
}

async function fuzzFrames(label: string, phase: Phase, runs: number, budgetMs: number): Promise<void> {
  const log = new FuzzLog(label, target, budgetMs);
  await fc.assert(
    fc.asyncProperty(fc.array(frameArb(phase), { minLength: BATCH, maxLength: BATCH }), async (cases) => {
      if (!log.stopped) await runCases(log, cases);
    }),
    fcParams(runs),
  );
  await noOpenSessions(f.db.pool, log);
  await noInternalErrors(target, log);
  log.finish();
}

/** Transport-level input and the exact frames of earlier crash reports, before and after hello. */
function transportCases(): FrameCase[] {
  const notUtf8 = [[0xff], [0x80], [0xc3], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80]];
  return (['pre', 'post'] as Phase[]).flatMap((phase): FrameCase[] => {
    const valid = phase === 'pre' ? JSON.stringify(hello([queue], { capacity: 0 })) : JSON.stringify({ type: 'drain' });
    const [head, tail] = phase === 'pre' ? [valid.slice(0, -1) + ',"agent":"a', '"}'] : ['{"type":"start","attempt_id":"', '"}'];
    const unknownField = phase === 'pre' ? { ...hello([queue]), ['é'.repeat(60)]: 1 } : { type: 'capacity', capacity: 1, ['é'.repeat(60)]: 1 };
    return [
      ...notUtf8.map((b) => ({
        phase,
        raw: true,
        data: Buffer.concat([Buffer.from(head), Buffer.from(b), Buffer.from(tail)]),
        expect: protocolError('text frame is not UTF-8'),
      })),
      { phase, raw: true, data: Buffer.from([0xfe, 0xff]), expect: protocolError('text frame is not UTF-8') },
      { phase, data: Buffer.from(valid), binary: true, expect: protocolError('binary frame', 1003) },
      { phase, data: 'x'.repeat(MAX_FRAME + 1), expect: protocolError('over max_frame_bytes', 1009) },
      {
        phase,
        data: JSON.stringify({ type: 'result', attempt_id: 'a', outcome: 'unknown', output: '😀'.repeat(MAX_FRAME / 4) }),
        expect: protocolError('over max_frame_bytes', 1009),
      },
      { phase, data: 'x'.repeat(2 * MAX_FRAME + 1), expect: protocolError('over twice max_frame_bytes', 1009) },
      {
        phase,
        raw: true,
        data: `{"type":"renew","attempt_ids":[${Array.from({ length: 20_000 }, () => `"${crypto.randomBytes(16).toString('hex')}"`).join(',')}]}`,
        expect: protocolError('a renew of 20 000 ids, over twice max_frame_bytes', 1009),
      },
      { phase, data: `{"type":"${'😀'.repeat(40)}"}`, expect: protocolError('type of 40 emoji') },
      { phase, data: JSON.stringify(unknownField), expect: protocolError('unknown field named 60 × é') },
      { phase, data: `{"type":"${'é'.repeat(200)}","${'中'.repeat(100)}":1}`, expect: protocolError('long non-ASCII type and key') },
    ];
  });
}

const PLACEHOLDER = 'f'.repeat(32);

/**
 * start and result frames about attempts this worker really holds (the placeholder id is replaced
 * by one): valid ones get start.ok/result.ok, refused ones leave attempt and task as they were
 * (after a fatal one the worker reconnects and resumes what it holds). Sequential, stateful.
 */
async function fuzzRealAttempts(runs: number, budgetMs: number): Promise<void> {
  const tn = await newTenant(f.db);
  const log = new FuzzLog('fuzz-frames real attempts', target, budgetMs);
  const workerId = `fz-real-${process.pid}`;
  const held: string[] = [];
  let p: Peer | null = null;
  const harvest = (q: Peer) => {
    held.push(...q.inbox.filter((m) => m.type === 'task.assign').map((m) => m.attempt_id as string));
    q.inbox.splice(0, q.inbox.length, ...q.inbox.filter((m) => m.type !== 'task.assign'));
  };
  const open = async (): Promise<Peer> => {
    const q = await wsPeer(target.url, tn.token);
    q.send(JSON.stringify(hello([tn.queue_id], { worker_id: workerId, capacity: 1024, resume: held.slice(0, 1024) })));
    await q.until((i) => i.some((m) => m.type === 'hello.ok'), 10_000);
    const ok = q.inbox.find((m) => m.type === 'hello.ok');
    if (!ok) {
      const why = seen(q);
      await q.end();
      throw new Error(`resume refused: ${why}`);
    }
    for (const l of ok.lost as string[]) held.splice(held.indexOf(l), 1);
    return q;
  };
  const stateOf = async (a: string) =>
    JSON.stringify(
      (
        await f.db.pool.query<RowDataPacket[]>('SELECT a.state, t.state AS ts, t.updated_at FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.id = ?', [
          a,
        ])
      )[0],
    );
  const id = fc.oneof({ arbitrary: fc.constant(PLACEHOLDER), weight: 8 }, hex32, fc.constantFrom(...BAD_IDS));
  const arb = fc
    .constantFrom('result' as const, 'result' as const, 'start' as const)
    .chain((t) => validArb(WORKER_FRAMES[t], { attempt_id: id }))
    .chain((v) => fc.oneof({ arbitrary: fc.constant({ text: JSON.stringify(v), how: 'valid' }), weight: 1 }, { arbitrary: mutantArb(v), weight: 2 }));
  await fc.assert(
    fc.asyncProperty(fc.array(arb, { minLength: BATCH, maxLength: BATCH }), async (texts) => {
      if (log.stopped) return;
      const subs = await Promise.all(
        texts.map(() => call(target.url, 'POST', '/v1/tasks', { token: tn.token, key: ikey('real'), body: taskBody(tn.queue_id) })),
      );
      if (subs.some((r) => r.status !== 201)) return log.fail(`could not submit tasks: ${subs.map((r) => r.status).join(',')}`);
      p ??= await open();
      await p.until(() => p!.inbox.filter((m) => m.type === 'task.assign').length >= BATCH, 10_000);
      harvest(p);
      if (held.length === 0) return log.fail(`no task was assigned to the worker: ${seen(p)}`);
      for (const [i, { text: t, how }] of texts.entries()) {
        const a = held[i % held.length]!;
        const text = t.replaceAll(PLACEHOLDER, a);
        const x = expectFor('post', text);
        const expect: Expect = x.kind === 'reply' && x.id === a ? { kind: 'reply', type: `${JSON.parse(text).type}.ok`, id: a, orFatal: false } : x;
        const before = await stateOf(a);
        harvest(p);
        const stats: Stats = { helloOk: 0, sessions: 0, replied: 0 };
        const r = await check(p, { phase: 'post', data: text, expect, how }, stats);
        log.cases++;
        log.accepted += stats.replied;
        harvest(p);
        if (!(await target.serving())) {
          log.fail(`GATEWAY PROCESS EXITED (${target.exitInfo()})\n    input: ${show(text)}`);
          log.crashes++;
          await target.restart();
          return void (p = null);
        }
        if (r) log.fail(`${r}\n    input: ${show(text)}`);
        const done = expect.kind === 'reply' && expect.type === 'result.ok' && !r;
        if (done) held.splice(held.indexOf(a), 1);
        else if (expect.kind !== 'reply' || expect.type === 'error') {
          const after = await stateOf(a);
          if (after !== before) log.fail(`a refused frame changed its attempt: ${before} → ${after}\n    input: ${show(text)}`);
        }
        if (p.closed) p = (await p.end(), await open());
        harvest(p);
      }
      // Finish what is left, so that the next run starts with a short resume list.
      p.inbox.length = 0;
      const left = held.splice(0);
      for (const a of left) p.send(JSON.stringify({ type: 'result', attempt_id: a, outcome: 'succeeded' }));
      await p.until((i) => i.filter((m) => m.type === 'result.ok').length >= left.length, 10_000);
      if (replies(p).filter((m) => m.type === 'result.ok').length !== left.length) log.fail(`finishing ${left.length} held attempts: ${seen(p)}`);
      p.inbox.splice(0, p.inbox.length, ...p.inbox.filter((m) => m.type === 'task.assign'));
    }),
    fcParams(runs),
  );
  await (p as Peer | null)?.end();
  await noInternalErrors(target, log);
  log.finish();
}

describe('worker frame fuzz (real gateway)', () => {
  it('transport: invalid UTF-8, binary, oversized frames and known crash inputs, before and after hello', { timeout: 60_000 }, async () => {
    const log = new FuzzLog('fuzz-frames transport', target);
    await runCases(log, transportCases());
    await noOpenSessions(f.db.pool, log);
    await noInternalErrors(target, log);
    log.finish();
  });

  it('first frames (before hello): every frame schema, mutated', { timeout: fuzzTimeout(32, 300) }, async () => {
    await fuzzFrames('fuzz-frames first frame', 'pre', 32, fuzzBudget(32, 300));
  });

  it('frames after hello: every frame schema, mutated; fatal ones on their own connection', { timeout: fuzzTimeout(32, 300) }, async () => {
    await fuzzFrames('fuzz-frames after hello', 'post', 32, fuzzBudget(32, 300));
  });

  it('start and result frames for attempts the worker holds, mutated: refused ones change nothing', { timeout: fuzzTimeout(4, 3000) }, async () => {
    await fuzzRealAttempts(4, fuzzBudget(4, 3000));
  });

  it('afterwards: the process is alive, /healthz answers 200 and a normal worker gets and finishes a task', async () => {
    expect(target.alive(), target.exitInfo()).toBe(true);
    expect(f.gw.child.exitCode, 'the original gateway process exited during the run').toBeNull();
    expect((await call(target.url, 'GET', '/healthz')).status).toBe(200);
    const w = await wsPeer(target.url, f.t.token);
    w.send(JSON.stringify(hello([queue], { capacity: 1 })));
    const next = async (type: string) => {
      await w.until((i) => i.some((m) => m.type === type), 10_000);
      const m = w.inbox.find((x) => x.type === type);
      expect(m, `${type}: ${seen(w)}`).toBeDefined();
      return m;
    };
    try {
      await next('hello.ok');
      const r = await call(target.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), body: taskBody(queue) });
      expect(r.status, r.text).toBe(201);
      const a = await next('task.assign');
      w.send(JSON.stringify({ type: 'start', attempt_id: a.attempt_id }));
      await next('start.ok');
      w.send(JSON.stringify({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded' }));
      expect((await next('result.ok')).task_state).toBe('SUCCEEDED');
    } finally {
      await w.end();
    }
    expect(target.gw.output.filter((l) => /uncaught|unhandled|FATAL ERROR/i.test(l))).toEqual([]);
  });
});
