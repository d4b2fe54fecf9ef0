// The reference resource-side fencing check (worker-sdk/fenced-resource.ts) on a real MariaDB:
// concurrent writers with stale and fresh tokens, duplicate operations, rollback on failure.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { RowDataPacket } from 'mysql2/promise';
import { createTestDb, type TestDb } from './support/db.js';
import { createPool, type Pool } from '../server/db/pool.js';
import { createFencedResource, StaleTokenError, type FencedResource } from '../worker-sdk/fenced-resource.js';

let db: TestDb;
let pool: Pool; // a wider pool than the test db's so 20 writers really overlap
let fence: FencedResource;
let run = 0;

beforeAll(async () => {
  db = await createTestDb();
  pool = createPool(db.dsn, { connectionLimit: 24 });
  fence = createFencedResource(pool, { table: 'app_fence' });
  await fence.ensureSchema();
  await fence.ensureSchema(); // idempotent
  await pool.query(
    `CREATE TABLE effects (seq BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY COMMENT 'commit order within a key (writes are serialized by the fence lock)',
      resource_key VARCHAR(191) NOT NULL COMMENT 'key written', operation_id VARCHAR(191) NOT NULL COMMENT 'operation',
      token BIGINT UNSIGNED NOT NULL COMMENT 'token used') COMMENT='test effects'`,
  );
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

async function effects(key: string): Promise<{ op: string; token: bigint }[]> {
  const [rows] = await pool.query<RowDataPacket[]>('SELECT operation_id, CAST(token AS CHAR) AS token FROM effects WHERE resource_key = ? ORDER BY seq', [key]);
  return rows.map((r) => ({ op: String(r.operation_id), token: BigInt(String(r.token)) }));
}

type Op = { token: bigint; op: string; delayMs: number };

/** Runs the ops concurrently on one key, sampling highest_token meanwhile; returns outcomes. */
async function hammer(key: string, ops: Op[]) {
  const samples: bigint[] = [];
  let done = false;
  const sampler = (async () => {
    while (!done) {
      samples.push(await fence.highestToken('ns-1', key));
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  const outcomes = await Promise.all(
    ops.map(async (o) => {
      await new Promise((r) => setTimeout(r, o.delayMs));
      try {
        const r = await fence.write({
          namespace: 'ns-1',
          key,
          token: o.token,
          operationId: o.op,
          apply: async (conn) => {
            await conn.query('INSERT INTO effects (resource_key, operation_id, token) VALUES (?, ?, ?)', [key, o.op, o.token.toString()]);
          },
        });
        return { ...o, kind: r.applied ? ('applied' as const) : ('duplicate' as const), highest: r.highestToken };
      } catch (err) {
        if (err instanceof StaleTokenError) return { ...o, kind: 'stale' as const, highest: err.highestToken };
        throw err;
      }
    }),
  );
  done = true;
  await sampler;
  samples.push(await fence.highestToken('ns-1', key));
  return { outcomes, samples };
}

function checkInvariants(ops: Op[], res: Awaited<ReturnType<typeof hammer>>, applied: { op: string; token: bigint }[]) {
  // No stale write applied after a higher token was seen: in commit order, tokens never go down.
  for (let i = 1; i < applied.length; i++) expect(applied[i]!.token >= applied[i - 1]!.token).toBe(true);
  // Each rejection names a strictly higher token the resource had already seen.
  for (const o of res.outcomes.filter((x) => x.kind === 'stale')) expect(o.highest > o.token).toBe(true);
  // Each operation id applied at most once, and exactly the applied outcomes left an effect.
  const appliedOps = applied.map((a) => a.op);
  expect(new Set(appliedOps).size).toBe(appliedOps.length);
  expect(res.outcomes.filter((o) => o.kind === 'applied').length).toBe(applied.length);
  // A duplicate never runs apply: its op id has exactly one effect, from another writer.
  for (const o of res.outcomes.filter((x) => x.kind === 'duplicate')) expect(appliedOps).toContain(o.op);
  // The fence never moves down, and ends at the highest token attempted (never stale by definition).
  for (let i = 1; i < res.samples.length; i++) expect(res.samples[i]! >= res.samples[i - 1]!).toBe(true);
  const max = ops.reduce((m, o) => (o.token > m ? o.token : m), 0n);
  expect(res.samples.at(-1)).toBe(max);
}

describe('fenced resource', () => {
  it('20 concurrent writers mixing stale and fresh tokens and duplicate operations', async () => {
    const seen = { applied: 0, duplicate: 0, stale: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            token: fc.bigInt({ min: 1n, max: 12n }),
            opNo: fc.integer({ min: 0, max: 14 }), // collisions → duplicate operation ids
            delayMs: fc.integer({ min: 0, max: 15 }),
          }),
          { minLength: 20, maxLength: 20 },
        ),
        async (raw) => {
          const key = `object/${++run}`;
          const ops = raw.map((r) => ({ token: r.token, op: `${key}#op-${r.opNo}`, delayMs: r.delayMs }));
          const res = await hammer(key, ops);
          checkInvariants(ops, res, await effects(key));
          for (const o of res.outcomes) seen[o.kind]++;
        },
      ),
      { numRuns: 12 },
    );
    // The runs really raced: some writers were fenced off and some operations deduplicated.
    expect(seen.stale).toBeGreaterThan(0);
    expect(seen.duplicate).toBeGreaterThan(0);
    expect(seen.applied).toBeGreaterThan(0);
  });

  it('strictly increasing permits: each new token fences off every older writer', async () => {
    const key = 'object/seq';
    const ops: Op[] = [];
    for (let t = 1n; t <= 20n; t++) ops.push({ token: t, op: `seq-${t}`, delayMs: Number(t) * 3 });
    const res = await hammer(key, ops);
    checkInvariants(ops, res, await effects(key));
    // A replay of an old permit after the fact is rejected and leaves no effect.
    await expect(fence.write({ namespace: 'ns-1', key, token: 3n, operationId: 'late-replay', apply: async () => {} })).rejects.toBeInstanceOf(StaleTokenError);
    expect(await fence.highestToken('ns-1', key)).toBe(20n);
  });

  it('equal token is the same permit (allowed); duplicates are deduped; uint64 max is exact', async () => {
    const key = 'object/eq';
    const max = 18446744073709551615n;
    const w = (op: string, token: bigint) =>
      fence.write({
        namespace: 'ns-1',
        key,
        token,
        operationId: op,
        apply: (c) => c.query('INSERT INTO effects (resource_key, operation_id, token) VALUES (?, ?, ?)', [key, op, token.toString()]).then(() => {}),
      });
    expect(await w('a', 7n)).toEqual({ applied: true, duplicate: false, highestToken: 7n });
    expect(await w('b', 7n)).toEqual({ applied: true, duplicate: false, highestToken: 7n });
    expect(await w('a', 7n)).toEqual({ applied: false, duplicate: true, highestToken: 7n });
    expect(await w('c', max)).toEqual({ applied: true, duplicate: false, highestToken: max });
    expect(await fence.highestToken('ns-1', key)).toBe(max);
    expect((await effects(key)).map((e) => e.token)).toEqual([7n, 7n, max]);
  });

  it('a failing apply rolls back the fence raise and the operation record', async () => {
    const key = 'object/rollback';
    await fence.write({ namespace: 'ns-1', key, token: 2n, operationId: 'r1', apply: async () => {} });
    await expect(
      fence.write({
        namespace: 'ns-1',
        key,
        token: 9n,
        operationId: 'r2',
        apply: async () => {
          throw new Error('boom');
        },
      }),
    ).rejects.toThrow('boom');
    expect(await fence.highestToken('ns-1', key)).toBe(2n);
    // The same operation may be retried (it was never recorded).
    expect(await fence.write({ namespace: 'ns-1', key, token: 9n, operationId: 'r2', apply: async () => {} })).toMatchObject({ applied: true });
  });

  it('keys and namespaces are independent and compared as exact bytes', async () => {
    await fence.write({ namespace: 'ns-A', key: 'object/A', token: 50n, operationId: 'x1', apply: async () => {} });
    // Different case, different namespace, decomposed accent: all different fences.
    for (const [ns, key] of [
      ['ns-A', 'object/a'],
      ['ns-B', 'object/A'],
      ['ns-A', 'caf\u00e9'],
      ['ns-A', 'cafe\u0301'],
    ] as const) {
      expect(await fence.write({ namespace: ns, key, token: 1n, operationId: `x-${ns}-${key}`, apply: async () => {} })).toMatchObject({ applied: true });
    }
    expect(await fence.highestToken('ns-A', 'object/A')).toBe(50n);
  });

  it('refuses tokens that are not a bigint in 1..2^64-1', async () => {
    const base = { namespace: 'ns-1', key: 'k', operationId: 'o', apply: async () => {} };
    await expect(fence.write({ ...base, token: 0n })).rejects.toThrow(RangeError);
    await expect(fence.write({ ...base, token: 18446744073709551616n })).rejects.toThrow(RangeError);
    await expect(fence.write({ ...base, token: 5 as unknown as bigint })).rejects.toThrow(TypeError);
  });
});
