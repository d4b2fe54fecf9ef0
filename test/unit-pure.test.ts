// Unit tests of pure parts (no database, no processes): what a result decides
// (server/dispatch/outcome.ts) in every branch, and the UTF-8 truncation of protocol strings.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decideOutcome, retryBackoffMs, type OutcomeInput } from '../server/dispatch/outcome.js';
import { MAX_CLOSE_REASON_BYTES, truncateUtf8 } from '../protocol/strings.js';
import { isId } from '../protocol/ids.js';

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
    expect(decideOutcome({ ...base, outcome: 'retry' })).toEqual({ attemptState: 'RETRY', taskState: 'WAITING', taskOutcome: null, attemptsMade: 1, backoffMs: 1000 });
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
    for (const bad of ['0123456789ABCDEF0123456789ABCDEF', 'é', '😀', '\ud800', ' nbsp', 'a'.repeat(31), 'a'.repeat(33), 42, null]) expect(isId(bad)).toBe(false);
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
