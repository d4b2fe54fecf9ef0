// Key turnover: the result that releases a key wakes the claim round that grants it to the next
// WAITING task of that key — token + 1, one holder, task.assign after the commit — never to a task
// of a paused queue, to a session without the capability or capacity, or past the key's
// exhaustion.
import { describe, expect, it } from 'vitest';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { assertPermitInvariants } from './support/invariants.js';
import { waitFor } from './support/wait.js';
import { finishWhileQueuePaused, keyRow, liveOnKey, metric, session, startAndFinish, taskState } from './support/keys-helpers.js';
import { submitTask } from './support/submit.js';

const f = useGatewayFixture({ tenant: false });
const url = () => f.gw.url;

describe('a released key goes to its next task through the claim round', () => {
  it("a finished attempt's key goes to the next task: token + 1, one holder", async () => {
    const t = await newTenant(f.db);
    const w = await session(url(), t, { capacity: 2 });
    const tasks = [];
    for (let i = 0; i < 4; i++) tasks.push(await submitTask(url(), t, { concurrency_key: 'hot/1', payload: { i } }));
    let a = await w.next('task.assign');
    const tokens = [BigInt(a.concurrency_token)];
    for (let i = 1; i < 4; i++) {
      // While one attempt holds the key, nothing else of the key is assigned (capacity 2).
      expect(await liveOnKey(f.db.pool, t.namespace_id, 'hot/1')).toBe(1);
      await startAndFinish(w, a.attempt_id);
      a = await w.next('task.assign');
      tokens.push(BigInt(a.concurrency_token));
    }
    await startAndFinish(w, a.attempt_id);
    expect(tokens).toEqual([tokens[0]!, tokens[0]! + 1n, tokens[0]! + 2n, tokens[0]! + 3n]);
    for (const x of tasks) expect(await taskState(f.db.pool, x.id)).toBe('SUCCEEDED');
    expect(await keyRow(f.db.pool, t.namespace_id, 'hot/1')).toMatchObject({ highest_token: String(tokens[3]), holder_attempt_id: null });
    w.close();
    await w.closed;
    await assertPermitInvariants(f.db.pool);
  });

  it('a paused queue gets no grant: the key is released and the next task waits', async () => {
    const t = await newTenant(f.db);
    const w = await session(url(), t, { capacity: 2 });
    await submitTask(url(), t, { concurrency_key: 'paused/1' });
    const second = await submitTask(url(), t, { concurrency_key: 'paused/1' });
    const a = await w.next('task.assign');
    await finishWhileQueuePaused(url(), t, w, a.attempt_id, f.db.pool, second.id);
    expect(await keyRow(f.db.pool, t.namespace_id, 'paused/1')).toMatchObject({ holder_attempt_id: null });
    w.close();
    await w.closed;
    await assertPermitInvariants(f.db.pool);
  });

  it('no grant to a session without the capability; an exhausted key is released, not granted', async () => {
    const t = await newTenant(f.db);
    const keyed = await session(url(), t, { capacity: 1 });
    const plain = await session(url(), t, { capacity: 4, concurrency_keys: false });
    await submitTask(url(), t, { concurrency_key: 'cap/1' });
    const second = await submitTask(url(), t, { concurrency_key: 'cap/1' });
    const third = await submitTask(url(), t, { concurrency_key: 'cap/1' });
    const a = await keyed.next('task.assign');
    // The key is at the last token but one: the next grant is 2^64-1, the one after is refused.
    await f.db.pool.query('UPDATE resource_keys SET highest_token = 18446744073709551614 WHERE namespace_id = ? AND concurrency_key = ?', [
      t.namespace_id,
      Buffer.from('cap/1'),
    ]);
    // The flagless session has free slots: the claim round the release wakes must pass it over
    // and grant the key, at its last token, to the keyed session.
    await startAndFinish(keyed, a.attempt_id);
    const b = await keyed.next('task.assign');
    expect(b).toMatchObject({ task: { id: second.id }, concurrency_token: '18446744073709551615' });
    // Exhausted now: b's result releases the key and no one gets it.
    const rounds = await metric(url(), 'orbit_claim_rounds_total');
    await startAndFinish(keyed, b.attempt_id);
    // Absence: until a claim round ran after the release (the keyed session has a free slot
    // again; an exhausted key is no candidate).
    await waitFor('a claim round after the release', async () => (await metric(url(), 'orbit_claim_rounds_total')) > rounds, { timeout: 10_000 });
    expect(keyed.frames.filter((x) => x.type === 'task.assign')).toEqual([]);
    expect(plain.frames.filter((x) => x.type === 'task.assign')).toEqual([]);
    expect(await taskState(f.db.pool, third.id)).toBe('WAITING');
    expect(await keyRow(f.db.pool, t.namespace_id, 'cap/1')).toMatchObject({ holder_attempt_id: null, highest_token: '18446744073709551615' });
    keyed.close();
    plain.close();
    await Promise.all([keyed.closed, plain.closed]);
    await assertPermitInvariants(f.db.pool);
  });

  it('a grant refused on an exhausted key leaks no permit (the session had a free slot)', async () => {
    const t = await newTenant(f.db);
    const w = await session(url(), t, { capacity: 2 });
    await submitTask(url(), t, { concurrency_key: 'exhausted/1' });
    const waiting = await submitTask(url(), t, { concurrency_key: 'exhausted/1' });
    const a = await w.next('task.assign');
    await f.db.pool.query('UPDATE resource_keys SET highest_token = 18446744073709551615 WHERE namespace_id = ? AND concurrency_key = ?', [
      t.namespace_id,
      Buffer.from('exhausted/1'),
    ]);
    await startAndFinish(w, a.attempt_id);
    await expect(w.next('task.assign', 800)).rejects.toThrow(/no task.assign/);
    expect(await taskState(f.db.pool, waiting.id)).toBe('WAITING');
    // Counters equal the live attempts (none): the refused grant's permits were not counted.
    await assertPermitInvariants(f.db.pool);
    w.close();
    await w.closed;
  });
});
