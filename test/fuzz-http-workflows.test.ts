// Property-based fuzzing of the workflow endpoints (docs/workflows.md "Endpoints", docs/http-api.md) against a
// real gateway process and MariaDB: bodies generated from the TypeBox schemas of
// protocol/workflow-schemas.ts and mutated (support/fuzz-schema.ts), ids that cannot exist and
// hostile query parameters in paths, invalid UTF-8. For every response: no 5xx, a documented code
// with its documented status in the envelope with X-Request-Id; a body the schema refuses is
// refused with INVALID_ARGUMENT (NOT_FOUND when its path id cannot exist either); a batch in which
// nothing was accepted leaves every workflow table (and tasks, receipts) exactly as it was, and a
// batch with acceptances moves the row counts by what was accepted only; no internal error is
// counted; the process is alive at the end. A file of its own with a small budget (fuzz-http's own
// file hit its timeout under load when these endpoints were added to it); the harness is
// support/fuzz-harness.ts, support/fuzz-schema.ts and support/fuzz-hostile.ts, shared with fuzz-http.
//
// Seeded: ORBIT_FUZZ_SEED, ORBIT_FUZZ_RUNS for more runs (support/fuzz-harness.ts).
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { TSchema } from '@sinclair/typebox';
import type { ErrorCode } from '../protocol/errors.js';
import * as W from '../protocol/workflow-schemas.js';
import { problem } from './support/fuzz-http-contract.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey, type RawResponse } from './support/http.js';
import { isId, judge, mutantArb, validArb } from './support/fuzz-schema.js';
import { BAD_UTF8, enc, idArb, HOSTILE_KEYS, HOSTILE_STRINGS } from './support/fuzz-hostile.js';
import { dbDiff, dbState, fcParams, FuzzLog, FuzzTarget, fuzzTimeout, noInternalErrors, type Probe } from './support/fuzz-harness.js';
import { newWorkflow, runCommand, startRun, taskStep } from './support/workflow-runs.js';

const BATCH = 20;
const CONCURRENCY = 6;
const f = useGatewayFixture({ queues: ['main'] });
let target: FuzzTarget;
/** Real ids: a workflow (its runs and versions), one to retire, a waiting run (signal `go` not
 * sent, so it stays RUNNING whatever a batch did to it), and a cancelled run (commands: 409). */
const real = { queue: '', wf: '', doomedWf: '', run: '', doneRun: '' };

const steps = () => [taskStep('a', real.queue), { key: 'wait', signal: { name: 'go', timeout_seconds: 86400 } }];

beforeAll(async () => {
  target = new FuzzTarget(f);
  real.queue = f.t.queues.main!;
  const api = { url: f.gw.url, token: f.t.token };
  real.wf = (await newWorkflow(api, steps())).workflow.id;
  real.doomedWf = (await newWorkflow(api, steps())).workflow.id;
  real.run = (await startRun(api, real.wf)).id;
  real.doneRun = (await startRun(api, real.wf)).id;
  expect((await runCommand(api, real.doneRun, 'cancel', { reason: 'fuzz: a final run' })).status).toBe(200);
});

interface Case {
  method: 'GET' | 'POST';
  path: string;
  ep: string;
  body?: string | Buffer;
  how?: string;
  /** Why the input must be refused, and with which codes; null when any documented answer is fine. */
  refuse: { why: string; codes: ErrorCode[] } | null;
  /** What a 201 of this case creates (for the row-count check). */
  creates?: 'workflow' | 'version' | 'run';
}

/** Ids for workflow paths: real ones more often than in fuzz-http (most endpoints have two). */
const wfIdArb = (realIds: string[]) => idArb(realIds, { real: 4, bad: 2 });

interface BodyEndpoint {
  path: string;
  schema: TSchema;
  ids?: () => string[];
  creates?: Case['creates'];
}
const BODY_ENDPOINTS: BodyEndpoint[] = [
  { path: '/v1/workflows', schema: W.CreateWorkflowBody, creates: 'workflow' },
  { path: '/v1/workflows/{id}/versions', schema: W.PublishWorkflowVersionBody, ids: () => [real.wf], creates: 'version' },
  { path: '/v1/workflows/{id}:retire', schema: W.RetireWorkflowBody, ids: () => [real.doomedWf] },
  { path: '/v1/workflows/{id}/runs', schema: W.StartWorkflowRunBody, ids: () => [real.wf, real.doomedWf], creates: 'run' },
  { path: '/v1/workflow-runs/{id}:pause', schema: W.PauseWorkflowRunBody, ids: () => [real.run, real.doneRun] },
  { path: '/v1/workflow-runs/{id}:resume', schema: W.ResumeWorkflowRunBody, ids: () => [real.run, real.doneRun] },
  { path: '/v1/workflow-runs/{id}:cancel', schema: W.CancelWorkflowRunBody, ids: () => [real.doneRun] },
  { path: '/v1/workflow-runs/{id}/signals', schema: W.SendSignalBody, ids: () => [real.run, real.doneRun] },
];

/** Values the rules beyond the schema accept, often enough that valid bodies reach the database. */
function overrides() {
  const stepArb = fc.constantFrom(
    [taskStep('a', real.queue)],
    steps(),
    [taskStep('a', real.queue), taskStep('b', real.queue, { after: ['a'], run_if: 'always' })],
    [taskStep('l', real.queue), taskStep('e', real.queue, { after: ['l'], for_each: 'l' })],
  );
  return {
    name: fc.oneof(fc.stringMatching(/^[a-z0-9._-]{1,24}$/), fc.string({ maxLength: 70 })),
    version: fc.oneof({ arbitrary: stepArb.map((s) => ({ steps: s })), weight: 3 }, validArb(W.WorkflowVersionInput, { queue_id: fc.constant(real.queue) })),
    expected_revision: fc.oneof(fc.constantFrom('0', '1', '2', '3'), fc.stringMatching(/^(0|[1-9][0-9]{0,19})$/)),
    queue_id: fc.oneof(fc.constant(real.queue), wfIdArb([])),
    concurrency_key: fc.oneof(fc.constantFrom('', 'object/42', 'é/😀/中'), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 })),
    name_signal: fc.constantFrom('go', 'nope'),
  };
}

function bodyCase(): fc.Arbitrary<Case> {
  const over = overrides();
  return fc.constantFrom(...BODY_ENDPOINTS).chain((ep) => {
    // A signal body's name: mostly the run's own signal, else a name no step waits for (400); a run
    // start's `version` is a number (published: 1, else 404), not a version body.
    const o = ep.path.endsWith('/signals')
      ? { ...over, name: over.name_signal }
      : ep.path.endsWith('/runs')
        ? { ...over, version: fc.integer({ min: 1, max: 3 }) }
        : over;
    return fc
      .record({
        id: ep.ids ? wfIdArb(ep.ids()) : fc.constant(''),
        text: validArb(ep.schema, o).chain((v) =>
          fc.oneof({ arbitrary: fc.constant({ text: JSON.stringify(v), how: 'valid' }), weight: 1 }, { arbitrary: mutantArb(v), weight: 2 }),
        ),
        bytes: fc.oneof({ arbitrary: fc.constant(null), weight: 12 }, fc.constantFrom(...BAD_UTF8)),
        query: fc.oneof({ arbitrary: fc.constant(''), weight: 15 }, fc.constantFrom('?x=1', '?', '?%F0%9F%98%80=%ED%A0%80')),
      })
      .map(({ id, text: { text, how }, bytes, query }): Case => {
        const c: Case = { method: 'POST', path: ep.path.replace('{id}', enc(id)) + query, ep: ep.path, body: text, how, refuse: null, creates: ep.creates };
        const idBad = ep.ids !== undefined && !isId(id);
        const refuse = (why: string) => ((c.refuse = { why, codes: idBad ? ['INVALID_ARGUMENT', 'NOT_FOUND'] : ['INVALID_ARGUMENT'] }), c);
        if (bytes) {
          const at = text.indexOf('"') + 1;
          c.body = Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(bytes), Buffer.from(text.slice(at))]);
          return refuse('body is not UTF-8');
        }
        if (query.length > 1) return refuse('command with query parameters');
        const v = judge(text === '' ? '{}' : text, () => ep.schema);
        if (!v.ok) return refuse(v.why);
        if (idBad) return refuse(`path id ${JSON.stringify(id)} cannot exist`);
        return c;
      });
  });
}

/** Reads: by id (real, random hex, not an id) and lists with allowed, foreign and hostile parameters. */
function readCase(): fc.Arbitrary<Case> {
  const byId: [string, () => string[]][] = [
    ['/v1/workflows/{id}', () => [real.wf, real.doomedWf]],
    ['/v1/workflows/{id}/versions', () => [real.wf]],
    ['/v1/workflow-runs/{id}', () => [real.run, real.doneRun]],
  ];
  const one = fc
    .constantFrom(...byId)
    .chain(([tpl, ids]) => fc.tuple(fc.constant(tpl), fc.constant(ids()), wfIdArb(ids())))
    .map(([tpl, ids, id]): Case => ({
      method: 'GET',
      path: tpl.replace('{id}', enc(id)),
      ep: tpl,
      refuse: !isId(id)
        ? { why: `id ${JSON.stringify(id)} cannot exist`, codes: ['INVALID_ARGUMENT', 'NOT_FOUND'] }
        : ids.includes(id)
          ? null
          : { why: 'no such id', codes: ['NOT_FOUND'] },
    }));
  const version = fc
    .tuple(wfIdArb([real.wf]), fc.oneof(fc.constantFrom('1', '2', '0', '-1', '01', '1e3', '99999999999999999999', 'é'), fc.string({ maxLength: 6 })))
    .map(([id, n]): Case => ({
      method: 'GET',
      path: `/v1/workflows/${enc(id)}/versions/${enc(n)}`,
      ep: '/v1/workflows/{id}/versions/{n}',
      refuse: id !== real.wf ? { why: 'no such workflow', codes: ['INVALID_ARGUMENT', 'NOT_FOUND'] } : null,
    }));
  const lists: [string, string[]][] = [
    ['/v1/workflows', ['limit', 'cursor']],
    ['/v1/workflow-runs', ['workflow_id', 'state', 'limit', 'cursor']],
  ];
  const value = fc.oneof(
    wfIdArb([real.wf]),
    fc.constantFrom(...HOSTILE_STRINGS, 'RUNNING', 'CANCELLED', 'running', '1', '500', '501', '0', 'czE'),
    fc.string({ unit: 'binary', maxLength: 10 }),
  );
  const list = fc
    .constantFrom(...lists)
    .chain(([base, allowed]) =>
      fc.record({
        base: fc.constant(base),
        allowed: fc.constant(allowed),
        params: fc.array(fc.tuple(fc.oneof({ arbitrary: fc.constantFrom(...allowed), weight: 5 }, fc.constantFrom(...HOSTILE_KEYS)), value), {
          minLength: 0,
          maxLength: 3,
        }),
      }),
    )
    .map(({ base, allowed, params }): Case => {
      const path = base + (params.length ? '?' + params.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&') : '');
      const names = params.map(([k]) => (k.isWellFormed() ? k : k.toWellFormed()));
      const bad = names.find((k) => !allowed.includes(k));
      return {
        method: 'GET',
        path,
        ep: base,
        refuse: bad !== undefined ? { why: `unknown parameter ${JSON.stringify(bad)}`, codes: ['INVALID_ARGUMENT'] } : null,
      };
    });
  return fc.oneof(one, version, list);
}

/** Why the response breaks the contract, or null. */

/** Every table a workflow command writes, counted and checksummed. */
const PROBES: Probe[] = [
  'workflows',
  'workflow_versions',
  'workflow_runs',
  'workflow_run_steps',
  'workflow_signals',
  'workflow_step_tasks',
  'tasks',
  'receipts',
];

async function fuzz(label: string, arb: fc.Arbitrary<Case>, runs: number, mustAccept: string[]): Promise<void> {
  const log = new FuzzLog(label, target);
  const accepts = new Map<string, number>();
  const send = async (c: Case, accepted: { c: Case; r: RawResponse }[]) => {
    const r = await call(target.url, c.method, c.path, { token: f.t.token, key: ikey('fzw'), ...(c.body === undefined ? {} : { rawBody: c.body }) });
    if (r.status < 300) {
      accepted.push({ c, r });
      log.accepted++;
      accepts.set(c.ep, (accepts.get(c.ep) ?? 0) + 1);
    }
    return problem(c, r);
  };
  await fc.assert(
    fc.asyncProperty(fc.array(arb, { minLength: BATCH, maxLength: BATCH }), async (cases) => {
      if (log.stopped) return;
      // First the inputs the oracle says must be refused, alone: not one row of any workflow table,
      // task or receipt may change (checksums, not only counts).
      const bad = cases.filter((c) => c.refuse !== null);
      let before = await dbState(f.db.pool, PROBES);
      const wrongly: { c: Case; r: RawResponse }[] = [];
      if (
        !(await log.batch(
          bad,
          CONCURRENCY,
          (c) => send(c, wrongly),
          (c) => c.body ?? null,
        ))
      )
        return;
      let after = await dbState(f.db.pool, PROBES);
      const diff0 = dbDiff(before, after, 'none');
      if (diff0.length) log.fail(`refused inputs changed the database: ${diff0.join('; ')}; paths: ${bad.map((c) => c.path.slice(0, 60)).join(' ')}`);
      // Then the rest, concurrently.
      const rest = cases.filter((c) => c.refuse === null);
      before = after;
      const accepted: { c: Case; r: RawResponse }[] = [];
      if (
        !(await log.batch(
          rest,
          CONCURRENCY,
          (c) => send(c, accepted),
          (c) => c.body ?? null,
        ))
      )
        return;
      after = await dbState(f.db.pool, PROBES);
      const posts = accepted.filter((a) => a.c.method === 'POST');
      if (posts.length === 0) {
        // Nothing written was accepted: not a row changed.
        const diff = dbDiff(before, after, 'none');
        if (diff.length) log.fail(`refused or read-only batch changed the database: ${diff.join('; ')}`);
        return;
      }
      // Accepted commands move the counts by what they created, and no more.
      const fresh = posts.filter((a) => a.r.status === 201 && a.r.body?.data?.deduplicated !== true);
      const n = (what: Case['creates']) => fresh.filter((a) => a.c.creates === what).length;
      const delta = { workflows: n('workflow'), workflow_versions: n('workflow') + n('version'), workflow_runs: n('run') };
      const diff = dbDiff(before, after, delta);
      if (diff.length) log.fail(`row counts moved by more than the ${posts.length} accepted command(s): ${diff.join('; ')}`);
    }),
    fcParams(runs),
  );
  await noInternalErrors(target, log);
  console.log(`${label}: accepted per endpoint ${JSON.stringify(Object.fromEntries(accepts))}`);
  for (const ep of mustAccept) if (!accepts.get(ep)) log.fail(`the generator degraded: no input to ${ep} was accepted`);
  log.finish();
}

describe('workflow endpoints fuzz (real gateway)', () => {
  it('command bodies from the schemas, mutated, on every workflow command', { timeout: fuzzTimeout(12, 400) }, async () => {
    await fuzz('fuzz-http-workflows commands', bodyCase(), 12, ['/v1/workflows', '/v1/workflows/{id}/runs']);
  });

  it('reads: ids that cannot exist, version numbers, list parameters', { timeout: fuzzTimeout(8, 300) }, async () => {
    await fuzz('fuzz-http-workflows reads', readCase(), 8, ['/v1/workflows', '/v1/workflow-runs', '/v1/workflow-runs/{id}']);
  });

  it('afterwards: the process is alive, /healthz answers and no 5xx was counted', async () => {
    expect(target.alive(), target.exitInfo()).toBe(true);
    expect(f.gw.child.exitCode, 'the original gateway process exited during the run').toBeNull();
    expect((await call(target.url, 'GET', '/healthz')).status).toBe(200);
    const m = await call(target.url, 'GET', '/metrics');
    expect([...m.text.matchAll(/^orbit_http_requests_total\{[^}]*status="5\d\d"[^}]*\} \d+/gm)].map((x) => x[0])).toEqual([]);
  });
});
