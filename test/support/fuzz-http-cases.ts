// The generated requests of the HTTP fuzz (test/fuzz-http.test.ts): bodies from the TypeBox schemas
// of protocol/http-schemas.ts, valid or mutated, on every command endpoint; batches with per-item
// refusals; reads with generated ids and query parameters. Each case carries why it must be
// refused (and with which codes), or null when acceptance is allowed: the test checks the answer.
import fc from 'fast-check';
import type { TSchema } from '@sinclair/typebox';
import type { ErrorCode } from '../../protocol/errors.js';
import * as S from '../../protocol/http-schemas.js';
import type { Refusal } from './fuzz-http-contract.js';
import { isId, judge, mutantArb, validArb, violation, type Overrides } from './fuzz-schema.js';
import { BAD_UTF8, enc, idArb, HOSTILE_KEYS, HOSTILE_NUMBERS, HOSTILE_STRINGS } from './fuzz-hostile.js';

/** Real ids of the tenant: paths and bodies name these, or ids that cannot exist. Retirement is
 * aimed at the doomed queue and subscription, so the others stay live for the rest of the run. */
export interface RealIds {
  queue: string;
  victim: string;
  doomed: string;
  task: string;
  sub: string;
  doomedSub: string;
}

export interface HttpCase {
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
  /** The real id the path names, from the run's ids. */
  id?: (real: RealIds) => string;
  receipt: boolean;
  creates?: HttpCase['creates'];
}
const BODY_ENDPOINTS: BodyEndpoint[] = [
  { path: '/v1/tasks', schema: S.SubmitTaskBody, receipt: true, creates: 'tasks' },
  { path: '/v1/tasks', schema: S.SubmitTaskBody, receipt: true, creates: 'tasks' },
  { path: '/v1/queues', schema: S.CreateQueueBody, receipt: true, creates: 'queues' },
  { path: '/v1/queues/{id}:pause', schema: S.RevisionBody, id: (real) => real.victim, receipt: true },
  { path: '/v1/queues/{id}:resume', schema: S.RevisionBody, id: (real) => real.victim, receipt: true },
  { path: '/v1/queues/{id}:retire', schema: S.RetireBody, id: (real) => real.doomed, receipt: true },
  { path: '/v1/tasks/{id}:cancel', schema: S.CancelTaskBody, id: (real) => real.task, receipt: true },
  { path: '/v1/tasks/{id}:resolve', schema: S.ResolveTaskBody, id: (real) => real.task, receipt: true },
  { path: '/v1/subscriptions', schema: S.CreateSubscriptionBody, receipt: true, creates: 'subscriptions' },
  { path: '/v1/subscriptions/{id}:pause', schema: S.RevisionBody, id: (real) => real.sub, receipt: true },
  { path: '/v1/subscriptions/{id}:resume', schema: S.RevisionBody, id: (real) => real.sub, receipt: true },
  { path: '/v1/subscriptions/{id}:retire', schema: S.RetireBody, id: (real) => real.doomedSub, receipt: true },
  { path: '/v1/subscriptions/{id}/deliveries:lease', schema: S.LeaseDeliveriesBody, id: (real) => real.sub, receipt: false },
  { path: '/v1/subscriptions/{id}/deliveries:ack', schema: S.AckDeliveriesBody, id: (real) => real.sub, receipt: false },
];

const realQueue = (real: RealIds, q: unknown) => q === real.queue || q === real.victim || q === real.doomed;

function overrides(real: RealIds): Overrides {
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

/** A body from an endpoint's schema, valid or mutated, sometimes with invalid UTF-8 or a query. */
export function bodyCase(real: RealIds): fc.Arbitrary<HttpCase> {
  const over = overrides(real);
  return fc.constantFrom(...BODY_ENDPOINTS).chain((ep) =>
    fc
      .record({
        id: ep.id ? idArb([ep.id(real)]) : fc.constant(''),
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
        if (q !== undefined && !realQueue(real, q)) return refuse(`queue_id ${JSON.stringify(q)} does not exist`, 'INVALID_ARGUMENT', 'NOT_FOUND');
        return c;
      }),
  );
}

/** POST /v1/tasks:batch: items from SubmitBatchItem, the whole body mutated; refusals per item. */
export function batchCase(real: RealIds): fc.Arbitrary<HttpCase> {
  const item = validArb(S.SubmitBatchItem, overrides(real));
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
        return realQueue(real, q) ? null : { why: `queue_id ${JSON.stringify(q)} does not exist`, codes: ['INVALID_ARGUMENT', 'NOT_FOUND'] };
      });
      return c;
    });
}

/** Reads by id: the path template and the real id it takes (none for attempts: no attempt exists). */
export const GET_PATHS: [string, (real: RealIds) => string | undefined][] = [
  ['/v1/tasks/{id}', (real) => real.task],
  ['/v1/tasks/{id}/attempts', (real) => real.task],
  ['/v1/attempts/{id}', () => undefined],
  ['/v1/queues/{id}', (real) => real.queue],
  ['/v1/subscriptions/{id}', (real) => real.sub],
  ['/v1/subscriptions/{id}/deliveries', (real) => real.sub],
  ['/v1/queues/{id}/stats', (real) => real.queue],
];
/** List endpoints and the query parameters each allows. */
export const LISTS: [string, string[]][] = [
  ['/v1/tasks', ['queue_id', 'state', 'concurrency_key', 'business_key', 'limit', 'cursor']],
  ['/v1/subscriptions/{sub}/deliveries', ['state', 'limit', 'cursor']],
  ['/v1/workers', ['queue_id']],
];
const STATES = ['WAITING', 'SUCCEEDED', 'PENDING', 'ACKED', 'waiting', 'é'];

/** A read: a list with generated parameters, or a read by a generated id. */
export function readCase(real: RealIds): fc.Arbitrary<HttpCase> {
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
    .chain(([tpl, realId]) => fc.tuple(fc.constant(tpl), fc.constant(realId(real)), idArb([realId(real)].filter((x): x is string => !!x))))
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
