// A result that frees a slot wakes the claim round that fills it: the next task in claim order, a
// keyed task whose key is free not passed over, nothing from a paused queue, only what the
// session's handlers accept — and the worker gets result.ok before the new task.assign.
import { describe, expect, it } from 'vitest';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { assertPermitInvariants } from './support/invariants.js';
import { finishWhileQueuePaused, keyRow, session, setQueuePausedOverHttp, startAndFinish, taskState } from './support/keys-helpers.js';
import { submitTask } from './support/submit.js';

const f = useGatewayFixture({ tenant: false });
const url = () => f.gw.url;

describe('a freed slot is filled by the next claim round', () => {
  it('each result of a full session is followed by the next task in priority order; result.ok comes first', async () => {
    const t = await newTenant(f.db);
    const w = await session(url(), t, { capacity: 1, concurrency_keys: false });
    const kinds: string[] = [];
    w.ws.on('message', (data) => {
      const type = (JSON.parse(data.toString()) as { type: string }).type;
      if (type === 'result.ok' || type === 'task.assign') kinds.push(type);
    });
    const first = await submitTask(url(), t, { priority: 9 });
    let a = await w.next('task.assign');
    expect(a.task.id).toBe(first.id);
    const rest = [];
    for (const priority of [0, 5, 1, 8]) rest.push(await submitTask(url(), t, { priority }));
    const order: number[] = [];
    for (let i = 0; i < 4; i++) {
      await startAndFinish(w, a.attempt_id);
      a = await w.next('task.assign');
      order.push(a.task.priority);
    }
    await startAndFinish(w, a.attempt_id);
    expect(order).toEqual([8, 5, 1, 0]);
    // Each task.assign after the first follows the result.ok of the attempt whose slot it took.
    expect(kinds).toEqual(['task.assign', ...Array.from({ length: 4 }, () => ['result.ok', 'task.assign']).flat(), 'result.ok']);
    for (const x of [first, ...rest]) expect(await taskState(f.db.pool, x.id)).toBe('SUCCEEDED');
    w.close();
    await w.closed;
    await assertPermitInvariants(f.db.pool);
  });

  it('never passes over a keyed task whose key is free', async () => {
    const t = await newTenant(f.db);
    await submitTask(url(), t);
    const w = await session(url(), t, { capacity: 1 });
    const a = await w.next('task.assign');
    const keyed = await submitTask(url(), t, { priority: 5, concurrency_key: 'refill/k' });
    const plain = await submitTask(url(), t, { priority: 0 });
    await startAndFinish(w, a.attempt_id);
    const b = await w.next('task.assign');
    expect(b.task.id).toBe(keyed.id);
    // A key grant: the first token of the fresh key, as recorded on the key row (not null).
    expect(b.concurrency_token).toBe('1');
    expect(await keyRow(f.db.pool, t.namespace_id, 'refill/k')).toMatchObject({ highest_token: '1', holder_attempt_id: b.attempt_id });
    await startAndFinish(w, b.attempt_id);
    const c = await w.next('task.assign');
    expect(c.task.id).toBe(plain.id);
    await startAndFinish(w, c.attempt_id);
    w.close();
    await w.closed;
    await assertPermitInvariants(f.db.pool);
  });

  it('a paused queue gets no grant: the next task waits, and runs after resume', async () => {
    const t = await newTenant(f.db);
    await submitTask(url(), t);
    const w = await session(url(), t, { capacity: 1, concurrency_keys: false });
    const a = await w.next('task.assign');
    const second = await submitTask(url(), t);
    await finishWhileQueuePaused(url(), t, w, a.attempt_id, f.db.pool, second.id);
    await assertPermitInvariants(f.db.pool);
    await setQueuePausedOverHttp(url(), t, false);
    const b = await w.next('task.assign');
    expect(b.task.id).toBe(second.id);
    await startAndFinish(w, b.attempt_id);
    w.close();
    await w.closed;
    await assertPermitInvariants(f.db.pool);
  });

  it("grants only tasks the session's handlers accept", async () => {
    const t = await newTenant(f.db);
    await submitTask(url(), t, { handler: 'a' });
    const w = await session(url(), t, { capacity: 1, concurrency_keys: false, handlers: [{ handler: 'a', versions: ['v1'] }] });
    const a = await w.next('task.assign');
    const other = await submitTask(url(), t, { handler: 'b', priority: 9 });
    const mine = await submitTask(url(), t, { handler: 'a', priority: 0 });
    await startAndFinish(w, a.attempt_id);
    const b = await w.next('task.assign');
    expect(b.task.id).toBe(mine.id);
    await startAndFinish(w, b.attempt_id);
    expect(await taskState(f.db.pool, other.id)).toBe('WAITING');
    w.close();
    await w.closed;
    await assertPermitInvariants(f.db.pool);
  });
});
