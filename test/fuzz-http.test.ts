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
// The generated cases: support/fuzz-http-cases.ts. Seeded: ORBIT_FUZZ_SEED (default in
// support/fuzz-harness.ts), ORBIT_FUZZ_RUNS for more runs.
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { taskBody } from './support/contract.js';
import { DepthReport, problem } from './support/fuzz-http-contract.js';
import { batchCase, bodyCase, GET_PATHS, LISTS, readCase, type HttpCase, type RealIds } from './support/fuzz-http-cases.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey, type RawResponse } from './support/http.js';
import { enc } from './support/fuzz-hostile.js';
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
/** The tenant's real ids (support/fuzz-http-cases.ts RealIds), set in beforeAll. */
const real: RealIds = { queue: '', victim: '', doomed: '', task: '', sub: '', doomedSub: '' };

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
  // A key row at token 0 without a holder is a key never granted: a transaction that writes a
  // keyed waiting row locks its key's row and creates it so when new (waiting heads, migration
  // 000009) — an accepted keyed submit, or the sweeper ending a keyed task at its deadline.
  {
    table: 'resource_keys',
    key: "CONCAT(namespace_id, '/', HEX(concurrency_key))",
    owners: ["IF(highest_token = 0 AND holder_attempt_id IS NULL, 'key-lock', NULL)"],
  },
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
      const touched = new Set<string>(['deadline', 'key-lock', ...(accepted.length ? ['*'] : [])]);
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
      fc.oneof({ arbitrary: bodyCase(real), weight: 6 }, batchCase(real)),
      60,
      ['/v1/tasks', '/v1/tasks:batch', '/v1/queues', '/v1/subscriptions', '/v1/subscriptions/{id}/deliveries:lease'],
      fuzzBudget(60, 250),
    );
  });

  it('ids and query parameters in reads: not-an-id, multi-byte, lone surrogates, unknown and repeated names', { timeout: fuzzTimeout(32, 150) }, async () => {
    await fuzz(
      'fuzz-http reads',
      readCase(real),
      32,
      [
        ...LISTS.map(([base]) => base),
        ...GET_PATHS.map(([tpl]) => tpl).filter((tpl) => tpl !== '/v1/attempts/{id}'), // no attempt exists: never accepted
      ],
      fuzzBudget(32, 150),
    );
  });

  it('known crash inputs are refused with 404/400, not 500', async () => {
    const log = new FuzzLog('fuzz-http known inputs', target);
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
