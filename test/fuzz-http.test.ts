// Property-based fuzzing of the HTTP facade against a real gateway process and MariaDB. Request
// bodies are generated from the TypeBox schemas of protocol/http-schemas.ts and mutated (multi-byte
// and astral strings in values and keys, lone surrogates, huge/negative numbers, -0, nesting past
// 512 levels, duplicate keys, unknown fields, wrong types, invalid UTF-8); ids that are not 32
// lowercase hex go into paths, query parameters and bodies. For every response: no 5xx, every
// refusal a documented code with its documented status, in the envelope with X-Request-Id; inputs
// the schema (or an id that cannot exist) refuses are refused; after each batch of refusals the
// database is unchanged, after mixed batches the row counts moved only by what was accepted; the
// process is alive and /healthz answers 200 at the end.
//
// Seeded: ORBIT_FUZZ_SEED (default in support/fuzz-harness.ts), ORBIT_FUZZ_RUNS for more runs.
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { TSchema } from '@sinclair/typebox';
import type { ErrorCode } from '../protocol/errors.js';
import * as S from '../protocol/http-schemas.js';
import { taskBody } from './support/contract.js';
import { DepthReport, problem, type Refusal } from './support/fuzz-http-contract.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey, type RawResponse } from './support/http.js';
import {
  BAD_UTF8,
  enc,
  idArb,
  HOSTILE_KEYS,
  HOSTILE_NUMBERS,
  HOSTILE_STRINGS,
  isId,
  judge,
  mutantArb,
  validArb,
  violation,
  type Overrides,
} from './support/fuzz-schema.js';
import {
  dbDiff,
  dbState,
  fcParams,
  FuzzLog,
  FuzzTarget,
  fuzzBudget,
  fuzzTimeout,
  namedIds,
  rowPrints,
  unaccounted,
  type DbState,
  type Probe,
  type RowPrints,
  type RowTable,
} from './support/fuzz-harness.js';

const BATCH = 25;
const CONCURRENCY = 8;
const f = useGatewayFixture({ queues: ['main', 'victim', 'doomed'] });
let target: FuzzTarget;
/** Real ids of the tenant: paths and bodies name these, or ids that cannot exist. Retirement is
 * aimed at the doomed queue and subscription, so the others stay live for the rest of the run. */
const real = { queue: '', victim: '', doomed: '', task: '', sub: '', doomedSub: '' };

beforeAll(async () => {
  target = new FuzzTarget(f);
  real.queue = f.t.queues.main!;
  real.victim = f.t.queues.victim!;
  real.doomed = f.t.queues.doomed!;
  const t = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), body: taskBody(real.queue) });
  expect(t.status, t.text).toBe(201);
  real.task = t.body.data.task.id;
  const sub = async (name: string, queue: string) => {
    const s = await call(f.gw.url, 'POST', '/v1/subscriptions', {
      token: f.t.token,
      key: ikey(),
      body: { name, queue_id: queue, event_types: ['task.succeeded'] },
    });
    expect(s.status, s.text).toBe(201);
    return s.body.data.subscription.id as string;
  };
  real.sub = await sub('fuzz-sub', real.victim);
  real.doomedSub = await sub('doomed-sub', real.doomed);
});

interface HttpCase {
  method: 'GET' | 'POST';
  path: string;
  /** The endpoint (path template), for the depth report. */
  ep?: string;
  body?: string | Buffer;
  /** The mutation applied, for failure reports. */
  how?: string;
  /** Why the input must be refused, and with which codes; null when acceptance is allowed. */
  refuse: Refusal | null;
  receipt: boolean;
  creates?: 'tasks' | 'queues' | 'subscriptions';
  /** POST /v1/tasks:batch: per item, why it must be refused (or null); no Idempotency-Key header. */
  items?: (Refusal | null)[];
  noKey?: boolean;
}

interface BodyEndpoint {
  path: string;
  schema: TSchema;
  id?: () => string;
  receipt: boolean;
  creates?: HttpCase['creates'];
}
const BODY_ENDPOINTS: BodyEndpoint[] = [
  { path: '/v1/tasks', schema: S.SubmitTaskBody, receipt: true, creates: 'tasks' },
  { path: '/v1/tasks', schema: S.SubmitTaskBody, receipt: true, creates: 'tasks' },
  { path: '/v1/queues', schema: S.CreateQueueBody, receipt: true, creates: 'queues' },
  { path: '/v1/queues/{id}:pause', schema: S.RevisionBody, id: () => real.victim, receipt: true },
  { path: '/v1/queues/{id}:resume', schema: S.RevisionBody, id: () => real.victim, receipt: true },
  { path: '/v1/queues/{id}:retire', schema: S.RetireBody, id: () => real.doomed, receipt: true },
  { path: '/v1/tasks/{id}:cancel', schema: S.CancelTaskBody, id: () => real.task, receipt: true },
  { path: '/v1/tasks/{id}:resolve', schema: S.ResolveTaskBody, id: () => real.task, receipt: true },
  { path: '/v1/subscriptions', schema: S.CreateSubscriptionBody, receipt: true, creates: 'subscriptions' },
  { path: '/v1/subscriptions/{id}:pause', schema: S.RevisionBody, id: () => real.sub, receipt: true },
  { path: '/v1/subscriptions/{id}:resume', schema: S.RevisionBody, id: () => real.sub, receipt: true },
  { path: '/v1/subscriptions/{id}:retire', schema: S.RetireBody, id: () => real.doomedSub, receipt: true },
  { path: '/v1/subscriptions/{id}/deliveries:lease', schema: S.LeaseDeliveriesBody, id: () => real.sub, receipt: false },
  { path: '/v1/subscriptions/{id}/deliveries:ack', schema: S.AckDeliveriesBody, id: () => real.sub, receipt: false },
];

const realQueue = (q: unknown) => q === real.queue || q === real.victim || q === real.doomed;

function overrides(): Overrides {
  return {
    queue_id: fc.oneof({ arbitrary: fc.constant(real.queue), weight: 4 }, { arbitrary: fc.constant(real.victim), weight: 1 }, idArb([])),
    delivery_ids: fc.array(idArb([]), { minLength: 1, maxLength: 3 }),
    expected_revision: fc.oneof(fc.constantFrom('0', '1', '2', '3'), fc.stringMatching(/^(0|[1-9][0-9]{0,19})$/)),
    // Mostly values the field rules beyond the schema accept, so that valid bodies reach the database.
    not_before: fc.oneof(
      fc.date({ min: new Date('2000-01-01'), max: new Date('2025-01-01'), noInvalidDate: true }).map((d) => d.toISOString()),
      fc.string({ maxLength: 40 }),
    ),
    business_key: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }),
    concurrency_key: fc.oneof(fc.constantFrom('', 'object/42', 'é/😀/中'), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 })),
    idempotency_key: fc.stringMatching(/^[\x21-\x7e]{1,40}$/),
  };
}

function bodyCase() {
  const over = overrides();
  return fc.constantFrom(...BODY_ENDPOINTS).chain((ep) =>
    fc
      .record({
        id: ep.id ? idArb([ep.id()]) : fc.constant(''),
        text: validArb(ep.schema, over).chain((v) =>
          fc.oneof({ arbitrary: fc.constant({ text: JSON.stringify(v), how: 'valid' }), weight: 1 }, { arbitrary: mutantArb(v), weight: 2 }),
        ),
        bytes: fc.oneof({ arbitrary: fc.constant(null), weight: 12 }, fc.constantFrom(...BAD_UTF8)),
        query: fc.oneof({ arbitrary: fc.constant(''), weight: 15 }, fc.constantFrom('?queue_id=%C3%A9', '?x=1', '?', '?%F0%9F%98%80=%ED%A0%80')),
      })
      .map(({ id, text: { text, how }, bytes, query }): HttpCase => {
        const path = ep.path.replace('{id}', enc(id)) + query;
        const c: HttpCase = { method: 'POST', path, ep: ep.path, body: text, how, refuse: null, receipt: ep.receipt, creates: ep.creates };
        const idBad = ep.id !== undefined && !isId(id);
        const refuse = (why: string, ...codes: ErrorCode[]) => ((c.refuse = { why, codes: idBad ? [...codes, 'NOT_FOUND'] : codes }), c);
        if (bytes) {
          const at = text.indexOf('"') + 1;
          c.body = Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(bytes), Buffer.from(text.slice(at))]);
          return refuse('body is not UTF-8', 'INVALID_ARGUMENT');
        }
        if (query.length > 1) return refuse('command with query parameters', 'INVALID_ARGUMENT');
        const v = judge(text === '' ? '{}' : text, () => ep.schema);
        if (!v.ok) return refuse(v.why, 'INVALID_ARGUMENT');
        if (idBad) return refuse(`path id ${JSON.stringify(id)} cannot exist`, 'INVALID_ARGUMENT');
        const q = v.value.queue_id;
        if (q !== undefined && !realQueue(q)) return refuse(`queue_id ${JSON.stringify(q)} does not exist`, 'INVALID_ARGUMENT', 'NOT_FOUND');
        return c;
      }),
  );
}

/** POST /v1/tasks:batch: items from SubmitBatchItem, the whole body mutated; refusals per item. */
function batchCase() {
  const item = validArb(S.SubmitBatchItem, overrides());
  return fc
    .record({
      items: fc.array(item, { minLength: 1, maxLength: 4 }),
      mutate: fc.boolean(),
      header: fc.oneof({ arbitrary: fc.constant(false), weight: 15 }, fc.constant(true)),
    })
    .chain(({ items, mutate, header }) =>
      (mutate ? mutantArb({ tasks: items }) : fc.constant({ text: JSON.stringify({ tasks: items }), how: 'valid' })).map((m) => ({ ...m, header })),
    )
    .map(({ text, how, header }): HttpCase => {
      const c: HttpCase = { method: 'POST', path: '/v1/tasks:batch', ep: '/v1/tasks:batch', body: text, how, refuse: null, receipt: false, noKey: !header };
      if (header) return ((c.refuse = { why: 'Idempotency-Key header on a batch', codes: ['INVALID_ARGUMENT'] }), c);
      const v = judge(text === '' ? '{}' : text, () => S.SubmitBatchBody);
      if (!v.ok) return ((c.refuse = { why: v.why, codes: ['INVALID_ARGUMENT'] }), c);
      c.items = (v.value.tasks as unknown[]).map((it): Refusal | null => {
        const why = it === null || typeof it !== 'object' || Array.isArray(it) ? 'item is not an object' : violation(it, S.SubmitBatchItem);
        if (why) return { why, codes: ['INVALID_ARGUMENT'] };
        const q = (it as { queue_id: unknown }).queue_id;
        return realQueue(q) ? null : { why: `queue_id ${JSON.stringify(q)} does not exist`, codes: ['INVALID_ARGUMENT', 'NOT_FOUND'] };
      });
      return c;
    });
}

const GET_PATHS: [string, () => string | undefined][] = [
  ['/v1/tasks/{id}', () => real.task],
  ['/v1/tasks/{id}/attempts', () => real.task],
  ['/v1/attempts/{id}', () => undefined],
  ['/v1/queues/{id}', () => real.queue],
  ['/v1/subscriptions/{id}', () => real.sub],
  ['/v1/subscriptions/{id}/deliveries', () => real.sub],
  ['/v1/queues/{id}/stats', () => real.queue],
];
/** List endpoints and the query parameters each allows. */
const LISTS: [string, string[]][] = [
  ['/v1/tasks', ['queue_id', 'state', 'concurrency_key', 'business_key', 'limit', 'cursor']],
  ['/v1/subscriptions/{sub}/deliveries', ['state', 'limit', 'cursor']],
  ['/v1/workers', ['queue_id']],
];
const STATES = ['WAITING', 'SUCCEEDED', 'PENDING', 'ACKED', 'waiting', 'é'];

function readCase() {
  const value = fc.oneof(
    idArb([]),
    fc.constantFrom(...HOSTILE_STRINGS, ...HOSTILE_NUMBERS, ...STATES, '1', '500', '501', 'czE'),
    fc.string({ unit: 'binary', maxLength: 10 }),
  );
  // A value the parameter accepts, a third of the time: else a list with two or three parameters
  // is almost never valid and the generator stops reaching past the checks (see the depth report).
  const validFor: Record<string, fc.Arbitrary<string>> = {
    queue_id: fc.constant(real.queue),
    state: fc.constantFrom('WAITING', 'SUCCEEDED', 'PENDING', 'ACKED'),
    limit: fc.constantFrom('1', '100', '500'),
    concurrency_key: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
    business_key: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
  };
  // Names: mostly the list's own (else a deliveries list, which takes three of the six, is almost
  // never valid), then the other lists' and hostile ones.
  const listParam = (allowed: string[]) =>
    fc
      .oneof(
        { arbitrary: fc.constantFrom(...allowed), weight: 6 },
        { arbitrary: fc.constantFrom('queue_id', 'state', 'concurrency_key', 'business_key', 'limit', 'cursor'), weight: 1 },
        fc.constantFrom(...HOSTILE_KEYS),
      )
      .chain((k) =>
        fc.tuple(
          fc.constant(k),
          fc.oneof(
            ...(Object.hasOwn(validFor, k) ? [{ arbitrary: validFor[k]!, weight: 2 }] : []),
            { arbitrary: idArb([real.queue]), weight: 1 },
            { arbitrary: value, weight: 2 },
          ),
        ),
      );
  const list = fc
    .constantFrom(...LISTS)
    .chain((list) => fc.record({ list: fc.constant(list), params: fc.array(listParam(list[1]), { minLength: 1, maxLength: 3 }) }))
    .map(({ list: [base, allowed], params }): HttpCase => {
      const path = base.replace('{sub}', real.sub) + '?' + params.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&');
      const names = params.map(([k]) => (k.isWellFormed() ? k : k.toWellFormed()));
      const c: HttpCase = { method: 'GET', path, ep: base, refuse: null, receipt: false };
      const bad = names.find((k) => !allowed.includes(k));
      const q = params.find(([k]) => k === 'queue_id')?.[1];
      if (bad !== undefined) c.refuse = { why: `unknown parameter ${JSON.stringify(bad)}`, codes: ['INVALID_ARGUMENT'] };
      // Past the names, the checks run parameter by parameter: a repeat and a missing queue both refuse.
      else if (new Set(names).size < names.length) c.refuse = { why: 'repeated parameter', codes: ['INVALID_ARGUMENT', 'NOT_FOUND'] };
      else if (q !== undefined && q !== real.queue)
        c.refuse = { why: `queue_id ${JSON.stringify(q)} does not exist`, codes: ['INVALID_ARGUMENT', 'NOT_FOUND'] };
      return c;
    });
  const byId = fc
    .constantFrom(...GET_PATHS)
    .chain(([tpl, realId]) => fc.tuple(fc.constant(tpl), fc.constant(realId()), idArb([realId()].filter((x): x is string => !!x))))
    .map(([tpl, realId, id]): HttpCase => ({
      method: 'GET',
      path: tpl.replace('{id}', enc(id)),
      ep: tpl,
      refuse: !isId(id)
        ? { why: `id ${JSON.stringify(id)} cannot exist`, codes: ['INVALID_ARGUMENT', 'NOT_FOUND'] }
        : id !== realId
          ? { why: 'no such id', codes: ['NOT_FOUND'] }
          : null,
      receipt: false,
    }));
  return fc.oneof(list, byId);
}

function probes(): Probe[] {
  return [
    {
      name: 'tasks',
      sql: "SELECT COUNT(*) AS n, BIT_XOR(CRC32(CONCAT_WS('|', id, queue_id, handler, handler_version, payload_version, payload, business_key, HEX(concurrency_key), priority, max_attempts, not_before))) AS x FROM tasks",
    },
    { name: 'target_task', sql: `SELECT COUNT(*) AS n, BIT_XOR(CRC32(CONCAT_WS('|', state, updated_at))) AS x FROM tasks WHERE id = '${real.task}'` },
    'receipts',
    'queues',
    'subscriptions',
    'deliveries',
    'attempts',
    'audit_log',
    'worker_sessions',
  ];
}

/** Every row a command could write, fingerprinted one by one, with the ids that own a change.
 * 'deadline': the sweeper ends generated tasks whose deadline_seconds ran out during the run (the
 * task, its event); 'events': what any new event moves (the stream head, the counters). */
const ROWS: RowTable[] = [
  { table: 'tasks', key: 'id', owners: ["IF(state = 'DEADLINE_EXCEEDED', 'deadline', id)"] },
  { table: 'receipts', key: "CONCAT(namespace_id, '/', idempotency_key)", owners: ['idempotency_key'] },
  { table: 'queues', key: 'id', owners: ['id'] },
  { table: 'subscriptions', key: 'id', owners: ['id'] },
  { table: 'deliveries', key: 'id', owners: ['id', 'subscription_id'] },
  { table: 'attempts', key: 'id', owners: ['task_id'] },
  { table: 'audit_log', key: 'id', owners: ['target_id'] },
  { table: 'result_events', key: "CONCAT(namespace_id, '/', sequence)", owners: ["IF(type = 'task.deadline_exceeded', 'deadline', task_id)"] },
  { table: 'resource_keys', key: "CONCAT(namespace_id, '/', HEX(concurrency_key))", owners: [] },
  { table: 'worker_sessions', key: 'id', owners: [] },
  // Counters and stream heads move with any accepted submit or cancel, and with any new event.
  { table: 'stream_heads', key: 'namespace_id', owners: ['*', "'events'"] },
  { table: 'applications', key: 'id', owners: ['*', "'events'"] },
];

/** Per endpoint: cases, accepted ones, and refusals past the schema (a code other than
 * INVALID_ARGUMENT: the input reached the lookups, permits or state checks). */
async function fuzz(label: string, arb: fc.Arbitrary<HttpCase>, runs: number, mustAccept: string[], budgetMs: number): Promise<void> {
  const log = new FuzzLog(label, target, budgetMs);
  const depth = new DepthReport();
  await fc.assert(
    fc.asyncProperty(fc.array(arb, { minLength: BATCH, maxLength: BATCH }), async (cases) => {
      if (log.stopped) return;
      const rowsBefore = await rowPrints(f.db.pool, ROWS);
      const accepted: { c: HttpCase; r: RawResponse; key?: string }[] = [];
      const ok = await log.batch(
        cases,
        CONCURRENCY,
        async (c) => {
          const key = c.noKey ? undefined : ikey('fz');
          const r = await call(target.url, c.method, c.path, {
            token: f.t.token,
            ...(key === undefined ? {} : { key }),
            ...(c.body === undefined ? {} : { rawBody: c.body }),
          });
          depth.record(c.ep ?? c.path, r);

          if (r.status < 300) {
            accepted.push({ c, r, key });
            log.accepted++;
          }
          return problem(c, r);
        },
        (c) => c.body ?? null,
      );
      if (!ok) return;
      const rowsAfter = await rowPrints(f.db.pool, ROWS);
      const touched = new Set<string>(['deadline', ...(accepted.length ? ['*'] : [])]);
      if (rowsAfter.get('result_events')!.size > rowsBefore.get('result_events')!.size) touched.add('events');
      for (const { c, r, key } of accepted) {
        for (const id of namedIds(c.path, c.body, r.text)) touched.add(id);
        if (key !== undefined) touched.add(key);
        // A batch's receipts are its items' own idempotency keys.
        if (c.items) for (const it of JSON.parse(String(c.body)).tasks) if (typeof it?.idempotency_key === 'string') touched.add(it.idempotency_key);
      }
      const stray = unaccounted(rowsBefore, rowsAfter, touched);
      if (stray.length) log.fail(`rows changed that no accepted case names (${accepted.length} accepted): ${stray.slice(0, 5).join('; ')}`);
      const delta: Record<string, number> = { tasks: 0, queues: 0, subscriptions: 0, receipts: 0, attempts: 0, worker_sessions: 0 };
      for (const { c, r } of accepted) {
        if (c.creates && r.status === 201) delta[c.creates]!++;
        if (c.receipt && r.body?.data?.deduplicated === false) delta.receipts!++;
        const created = c.items ? (r.body?.data?.results ?? []).filter((x: any) => x?.status === 201).length : 0;
        delta.tasks! += created;
        delta.receipts! += created;
      }
      // Row counts moved by exactly what was accepted (the row check above saw every change).
      const counts = (p: RowPrints): DbState => ({ counts: Object.fromEntries([...p].map(([t, m]) => [t, m.size])), sums: {} });
      const diff = dbDiff(counts(rowsBefore), counts(rowsAfter), delta);
      if (diff.length)
        log.fail(
          `database changed wrongly by a batch (${accepted.length} accepted): ${diff.join('; ')}; batch paths: ${cases.map((c) => c.path.slice(0, 60)).join(' ')}`,
        );
    }),
    fcParams(runs),
  );
  depth.report(label, mustAccept, log);
  log.finish();
}

describe('HTTP fuzz (real gateway)', () => {
  it('request bodies from the schemas, mutated, on every command endpoint', { timeout: fuzzTimeout(60, 250) }, async () => {
    await fuzz(
      'fuzz-http bodies',
      fc.oneof({ arbitrary: bodyCase(), weight: 6 }, batchCase()),
      60,
      ['/v1/tasks', '/v1/tasks:batch', '/v1/queues', '/v1/subscriptions', '/v1/subscriptions/{id}/deliveries:lease'],
      fuzzBudget(60, 250),
    );
  });

  it('ids and query parameters in reads: not-an-id, multi-byte, lone surrogates, unknown and repeated names', { timeout: fuzzTimeout(32, 150) }, async () => {
    await fuzz(
      'fuzz-http reads',
      readCase(),
      32,
      [
        ...LISTS.map(([base]) => base),
        ...GET_PATHS.map(([tpl]) => tpl).filter((tpl) => tpl !== '/v1/attempts/{id}'), // no attempt exists: never accepted
      ],
      fuzzBudget(32, 150),
    );
  });

  it('the exact inputs of issue 9 are refused with 404/400, not 500', async () => {
    const log = new FuzzLog('fuzz-http issue 9', target);
    const cases = ['é', '😀', '\ud800', '\u00a0nbsp', '0123456789abcdef0123456789abcdef0'].flatMap((q): HttpCase[] => [
      {
        method: 'POST',
        path: '/v1/tasks',
        body: JSON.stringify(taskBody(q)),
        refuse: { why: 'no such queue', codes: ['NOT_FOUND', 'INVALID_ARGUMENT'] },
        receipt: true,
      },
      {
        method: 'POST',
        path: '/v1/subscriptions',
        body: JSON.stringify({ name: 'n', queue_id: q, event_types: ['task.failed'] }),
        refuse: { why: 'no such queue', codes: ['NOT_FOUND', 'INVALID_ARGUMENT'] },
        receipt: true,
      },
      { method: 'GET', path: `/v1/tasks?queue_id=${enc(q)}`, refuse: { why: 'no such queue', codes: ['NOT_FOUND', 'INVALID_ARGUMENT'] }, receipt: false },
      { method: 'GET', path: `/v1/queues/${enc(q)}`, refuse: { why: 'no such queue', codes: ['NOT_FOUND', 'INVALID_ARGUMENT'] }, receipt: false },
    ]);
    const before = await dbState(f.db.pool, probes());
    await log.batch(
      cases,
      4,
      async (c) => problem(c, await call(target.url, c.method, c.path, { token: f.t.token, key: ikey('i9'), ...(c.body ? { rawBody: c.body } : {}) })),
      (c) => c.body ?? null,
    );
    const diff = dbDiff(before, await dbState(f.db.pool, probes()), 'none');
    if (diff.length) log.fail(`database changed by refused inputs: ${diff.join('; ')}`);
    log.finish();
  });

  it('afterwards: the process is alive, /healthz answers 200 and a normal submit works', async () => {
    expect(target.alive(), target.exitInfo()).toBe(true);
    expect(f.gw.child.exitCode, 'the original gateway process exited during the run').toBeNull();
    expect((await call(target.url, 'GET', '/healthz')).status).toBe(200);
    const r = await call(target.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), body: taskBody(real.queue) });
    expect(r.status, r.text).toBe(201);
    const m = await call(target.url, 'GET', '/metrics');
    expect([...m.text.matchAll(/^orbit_http_requests_total\{[^}]*status="5\d\d"[^}]*\} \d+/gm)].map((x) => x[0])).toEqual([]);
  });
});
