// Unit tests of pure parts (no database, no processes): what a result decides
// (server/dispatch/result-decision.ts) in every branch, the UTF-8 truncation of protocol strings, and the
// protocol's one home of limits, primitives and states (protocol/limits.ts, primitives.ts,
// states.ts): the schemas enforce the limits, the state lists are the database's ENUMs.
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CapacityFrame, HelloFrame, MAX_FRAME_DEPTH, parseWorkerFrame, RenewFrame } from '../protocol/frames.js';
import { compiled, CreateQueueBody, SubmitBatchBody, SubmitTaskBody } from '../protocol/http-schemas.js';
import * as limits from '../protocol/limits.js';
import { IDEMPOTENCY_KEY_RE, jsonDepth, RESOURCE_NAME_RE, tooDeep, UINT64_RE } from '../protocol/primitives.js';
import * as states from '../protocol/states.js';
import { isUint64String } from '../protocol/validation.js';
import { TOKEN_MAX } from '../server/db/claim-sql.js';
import { packageRoot } from '../server/paths.js';
import { decideOutcome, retryBackoffMs, type OutcomeInput } from '../server/dispatch/lifecycle.js';
import { MAX_CLOSE_REASON_BYTES, truncateUtf8 } from '../protocol/strings.js';
import { isId } from '../protocol/ids.js';
import { budgetFor, MIN_MAX_ALLOWED_PACKET, roundTrips, StatementTooLarge } from '../server/db/packet-budget.js';

const base: OutcomeInput = {
  outcome: 'succeeded',
  attemptState: 'RUNNING',
  attemptsMade: 1,
  maxAttempts: 3,
  nowMs: 1_000_000,
  deadlineMs: 1_000_000 + 3_600_000,
  policy: { initial: 1000, max: 60_000, multiplier: 2 },
  jitter: 0.5,
};

describe('decideOutcome', () => {
  it.each([
    ['succeeded', 'SUCCEEDED', 'SUCCEEDED', 'succeeded'],
    ['failed', 'FAILED', 'FAILED', 'failed'],
    ['unknown', 'UNKNOWN', 'NEEDS_REVIEW', 'unknown'],
  ] as const)('%s → attempt %s, task %s', (outcome, attemptState, taskState, taskOutcome) => {
    expect(decideOutcome({ ...base, outcome })).toEqual({ attemptState, taskState, taskOutcome, attemptsMade: 1, backoffMs: 0 });
  });

  it('a result for a never-started (LEASED) attempt counts it as started', () => {
    expect(decideOutcome({ ...base, attemptState: 'LEASED', attemptsMade: 0 }).attemptsMade).toBe(1);
  });

  it('retry with attempts left and time before the deadline → WAITING with the backoff', () => {
    expect(decideOutcome({ ...base, outcome: 'retry' })).toEqual({
      attemptState: 'RETRY',
      taskState: 'WAITING',
      taskOutcome: null,
      attemptsMade: 1,
      backoffMs: 1000,
    });
  });

  it("retry uses the worker's retry_after_ms when given", () => {
    expect(decideOutcome({ ...base, outcome: 'retry', retryAfterMs: 7 }).backoffMs).toBe(7);
  });

  it('retry at max_attempts → FAILED', () => {
    expect(decideOutcome({ ...base, outcome: 'retry', attemptsMade: 3 })).toMatchObject({ attemptState: 'RETRY', taskState: 'FAILED', taskOutcome: 'failed' });
  });

  it('retry whose backoff reaches the deadline → FAILED; one just before → WAITING', () => {
    expect(decideOutcome({ ...base, outcome: 'retry', retryAfterMs: 3_600_000 }).taskState).toBe('FAILED');
    expect(decideOutcome({ ...base, outcome: 'retry', retryAfterMs: 3_599_999 }).taskState).toBe('WAITING');
  });

  it('retry without the queue policy is a programming error', () => {
    expect(() => decideOutcome({ ...base, outcome: 'retry', policy: null })).toThrow(/retry policy/);
  });

  it('backoff: initial × multiplier^(n−1), capped, ±20 % jitter', () => {
    const p = { initial: 1000, max: 5000, multiplier: 2 };
    expect(retryBackoffMs(undefined, p, 1, 0.5)).toBe(1000);
    expect(retryBackoffMs(undefined, p, 3, 0.5)).toBe(4000);
    expect(retryBackoffMs(undefined, p, 10, 0.5)).toBe(5000);
    expect(retryBackoffMs(undefined, p, 1, 0)).toBe(800);
    expect(retryBackoffMs(undefined, p, 1, 0.9999999)).toBe(1200);
  });
});

describe('truncateUtf8', () => {
  it('cuts by UTF-8 bytes on a code-point boundary', () => {
    expect(truncateUtf8('😀'.repeat(40), MAX_CLOSE_REASON_BYTES)).toBe('😀'.repeat(30));
    expect(truncateUtf8('é'.repeat(70), MAX_CLOSE_REASON_BYTES)).toBe('é'.repeat(61));
    expect(truncateUtf8('abc', 123)).toBe('abc');
    expect(truncateUtf8('a😀', 4)).toBe('a');
  });

  it('property: the result is a prefix, fits the limit, is never cut inside a pair, and is maximal', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), fc.integer({ min: 0, max: 200 }), (s, max) => {
        const t = truncateUtf8(s, max);
        expect(s.startsWith(t)).toBe(true);
        expect(Buffer.byteLength(t)).toBeLessThanOrEqual(max);
        const next = [...s.slice(t.length)][0];
        if (next !== undefined) expect(Buffer.byteLength(t + next)).toBeGreaterThan(max);
      }),
      { seed: 20261130, numRuns: 500 },
    );
  });
});

describe('isId', () => {
  it('accepts exactly 32 lowercase hex characters', () => {
    expect(isId('0123456789abcdef0123456789abcdef')).toBe(true);
    for (const bad of ['0123456789ABCDEF0123456789ABCDEF', 'é', '😀', '\ud800', ' nbsp', 'a'.repeat(31), 'a'.repeat(33), 42, null])
      expect(isId(bad)).toBe(false);
  });
});

describe('config', () => {
  it('parses and range-checks the timing variables (a non-number is refused, not NaN)', async () => {
    const { loadConfig } = await import('../server/config.js');
    const env = { ORBIT_MYSQL_DSN: 'mysql://u:p@127.0.0.1:3306/d' };
    expect(loadConfig(env)).toMatchObject({ helloTimeoutMs: 10_000, pingIntervalMs: 15_000, sweepIntervalMs: 500 });
    expect(loadConfig({ ...env, ORBIT_PING_INTERVAL_MS: '3000' }).pingIntervalMs).toBe(3000);
    expect(() => loadConfig({ ...env, ORBIT_PING_INTERVAL_MS: 'soon' })).toThrow(/ORBIT_PING_INTERVAL_MS must be an integer/);
    expect(() => loadConfig({ ...env, ORBIT_HELLO_TIMEOUT_MS: '0' })).toThrow(/ORBIT_HELLO_TIMEOUT_MS/);
  });
});

describe('protocol limits and primitives', () => {
  const nest = (depth: number): unknown => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = i % 2 ? { k: v } : [v];
    return v;
  };

  it('jsonDepth counts object/array levels without recursion and stops past the cap', () => {
    expect(jsonDepth(7)).toBe(0);
    expect(jsonDepth(null)).toBe(0);
    expect(jsonDepth({})).toBe(1);
    expect(jsonDepth({ a: [1, { b: [] }], c: 'x' })).toBe(4);
    expect(jsonDepth(nest(100_000), 10)).toBe(11); // no stack overflow, stops at cap + 1
    expect(tooDeep(nest(limits.MAX_JSON_DEPTH))).toBe(false);
    expect(tooDeep(nest(limits.MAX_JSON_DEPTH + 1))).toBe(true);
  });

  it('worker frames and HTTP bodies share the depth bound', () => {
    expect(MAX_FRAME_DEPTH).toBe(limits.MAX_JSON_DEPTH);
    const frame = (depth: number) => JSON.stringify({ type: 'result', attempt_id: 'a', outcome: 'succeeded', output: nest(depth - 1) });
    expect(parseWorkerFrame(frame(limits.MAX_JSON_DEPTH)).ok).toBe(true);
    expect(parseWorkerFrame(frame(limits.MAX_JSON_DEPTH + 1))).toEqual({ ok: false, message: `frame is nested deeper than ${limits.MAX_JSON_DEPTH} levels` });
  });

  it('the frame schemas enforce capacity, ids per frame and name lengths from limits.ts', () => {
    const cap = compiled(CapacityFrame);
    expect(cap.Check({ type: 'capacity', capacity: limits.MAX_CAPACITY })).toBe(true);
    expect(cap.Check({ type: 'capacity', capacity: limits.MAX_CAPACITY + 1 })).toBe(false);
    const renew = compiled(RenewFrame);
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `a${i}`);
    expect(renew.Check({ type: 'renew', attempt_ids: ids(limits.MAX_IDS_PER_FRAME) })).toBe(true);
    expect(renew.Check({ type: 'renew', attempt_ids: ids(limits.MAX_IDS_PER_FRAME + 1) })).toBe(false);
    const hello = compiled(HelloFrame);
    const h = (worker_id: string) => ({ type: 'hello', protocol: 1, worker_id, queues: ['q'], capacity: 1 });
    expect(hello.Check(h('w'.repeat(limits.WORKER_ID_MAX)))).toBe(true);
    expect(hello.Check(h('w'.repeat(limits.WORKER_ID_MAX + 1)))).toBe(false);
  });

  it('the body schemas enforce the batch size, name and handler rules from limits.ts and primitives.ts', () => {
    const item = { queue_id: 'q', handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: {} };
    const batch = compiled(SubmitBatchBody);
    expect(batch.Check({ tasks: Array(limits.MAX_BATCH_ITEMS).fill(item) })).toBe(true);
    expect(batch.Check({ tasks: Array(limits.MAX_BATCH_ITEMS + 1).fill(item) })).toBe(false);
    const submit = compiled(SubmitTaskBody);
    expect(submit.Check({ ...item, handler: 'h'.repeat(limits.HANDLER_MAX) })).toBe(true);
    expect(submit.Check({ ...item, handler: 'h'.repeat(limits.HANDLER_MAX + 1) })).toBe(false);
    expect(submit.Check({ ...item, priority: limits.PRIORITY_MAX + 1 })).toBe(false);
    const queue = compiled(CreateQueueBody);
    expect(queue.Check({ name: 'q'.repeat(limits.RESOURCE_NAME_MAX) })).toBe(true);
    expect(queue.Check({ name: 'q'.repeat(limits.RESOURCE_NAME_MAX + 1) })).toBe(false);
    expect(RESOURCE_NAME_RE.test('Upper')).toBe(false);
    expect(IDEMPOTENCY_KEY_RE.test('k'.repeat(limits.IDEMPOTENCY_KEY_MAX))).toBe(true);
    expect(IDEMPOTENCY_KEY_RE.test('k'.repeat(limits.IDEMPOTENCY_KEY_MAX + 1))).toBe(false);
  });

  it('uint64: the pattern, the range and the fencing-token ceiling are one value', () => {
    expect(limits.UINT64_MAX).toBe(2n ** 64n - 1n);
    expect(limits.TOKEN_MAX).toBe(limits.UINT64_MAX);
    expect(TOKEN_MAX).toBe('18446744073709551615'); // the SQL literal of server/db/claim-sql.ts
    expect(isUint64String(String(limits.UINT64_MAX))).toBe(true);
    expect(isUint64String(String(limits.UINT64_MAX + 1n))).toBe(false);
    expect(UINT64_RE.test('007')).toBe(false);
  });
});

describe('protocol states', () => {
  /** The ENUM values of `table.state`, from the migrations (the last definition wins). */
  function enumOf(table: string): string[] {
    const dir = path.join(packageRoot(), 'migrations');
    let values: string[] | null = null;
    for (const f of fs
      .readdirSync(dir)
      .filter((x) => x.endsWith('.sql'))
      .sort()) {
      const sql = fs.readFileSync(path.join(dir, f), 'utf8');
      // A CREATE TABLE block (up to its closing parenthesis line), or an ALTER TABLE statement (comments
      // may hold semicolons, so a block is not cut at one).
      const blocks = [
        ...sql.matchAll(new RegExp(`CREATE TABLE ${table} \\(([\\s\\S]*?)\\n\\)`, 'g')),
        ...sql.matchAll(new RegExp(`ALTER TABLE ${table}\\b([^\\n]*(?:\\n +[^\\n]*)*)`, 'g')),
      ];
      for (const b of blocks) {
        const m = /\bstate ENUM\(([^)]*)\)/.exec(b[1]!);
        if (m) values = [...m[1]!.matchAll(/'([A-Z_]+)'/g)].map((x) => x[1]!);
      }
    }
    if (!values) throw new Error(`no state ENUM for ${table}`);
    return values;
  }

  it('the state lists are the database ENUMs, in order', () => {
    expect([...states.TASK_STATES]).toEqual(enumOf('tasks'));
    expect([...states.ATTEMPT_STATES]).toEqual(enumOf('attempts'));
    expect([...states.DELIVERY_STATES]).toEqual(enumOf('deliveries'));
    expect([...states.WORKFLOW_RUN_STATES]).toEqual(enumOf('workflow_runs'));
    expect([...states.WORKFLOW_STEP_STATES]).toEqual(enumOf('workflow_run_steps'));
  });

  it('the guards accept exactly the listed states', () => {
    for (const s of states.TASK_STATES) expect(states.isTaskState(s)).toBe(true);
    for (const s of states.DELIVERY_STATES) expect(states.isDeliveryState(s)).toBe(true);
    for (const bad of ['waiting', 'WAITNG', '', 'RETRY']) expect(states.isTaskState(bad)).toBe(false);
    expect(states.isDeliveryState('DONE')).toBe(false);
    expect(states.ATTEMPT_STATES.filter(states.isLiveAttemptState)).toEqual([...states.LIVE_ATTEMPT_STATES]);
    expect(states.TASK_STATES.filter((s) => (states.UNFINISHED_TASK_STATES as readonly string[]).includes(s))).toEqual([...states.UNFINISHED_TASK_STATES]);
    for (const s of states.WORKFLOW_RUN_STATES) expect(states.isWorkflowRunState(s)).toBe(true);
    expect(states.isWorkflowRunState('running')).toBe(false);
    expect(states.WORKFLOW_RUN_STATES.filter((s) => (states.UNFINISHED_RUN_STATES as readonly string[]).includes(s))).toEqual([
      ...states.UNFINISHED_RUN_STATES,
    ]);
    expect(states.WORKFLOW_STEP_STATES.filter(states.isFinishedStepState)).toEqual([...states.FINISHED_STEP_STATES]);
  });
});

describe('statement budget (server/db/packet-budget.ts) and byte-bounded batches', () => {
  const MiB = 1024 * 1024;

  it('derives from max_allowed_packet and refuses a server below 4 MiB with one clear line', () => {
    expect(budgetFor(16 * MiB)).toEqual({ maxAllowedPacket: 16 * MiB, bytes: 16 * MiB - 64 * 1024 });
    expect(budgetFor(MIN_MAX_ALLOWED_PACKET).bytes).toBe(4 * MiB - 64 * 1024);
    expect(() => budgetFor(4 * MiB - 1)).toThrow(
      /^the database's max_allowed_packet is 4194303 bytes; Orbit needs at least 4194304 \(4 MiB\): set max_allowed_packet=16M/,
    );
    expect(() => budgetFor(Number.NaN)).toThrow(/max_allowed_packet/);
  });

  it('groups texts into round trips by their exact UTF-8 bytes, in order; a text over the budget is refused', () => {
    const budget = { maxAllowedPacket: 0, bytes: 10 };
    // 'é' is 2 bytes: 'éé' + ';\n' + 'abcd' = 10 bytes fit; one more byte goes to the next trip.
    expect(roundTrips(['éé', 'abcd', 'e', 'abcdefghij', 'x'], budget)).toEqual([['éé', 'abcd'], ['e'], ['abcdefghij'], ['x']]);
    expect(roundTrips([], budget)).toEqual([]);
    expect(() => roundTrips(['a', 'ééééé!'], budget)).toThrow(StatementTooLarge);
  });
});
