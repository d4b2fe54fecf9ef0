// What the claim transaction assigns and when, against a real gateway process: priority order,
// not_before, paused queues, queue and application permit limits. not_before and limits are moved
// in SQL instead of waiting. The permit invariants are asserted after every test.
import { describe, expect, it } from 'vitest';
import { call, ikey } from './support/http.js';
import { newTenant } from './support/db.js';
import { connect, createQueue, expectNoFrame, makeDue, result, sqlTask, start, submit, useDispatchFixture } from './support/dispatch-fixture.js';
import { taskBody } from './support/contract.js';
import { waitFor } from './support/wait.js';

const f = useDispatchFixture();

async function pause(queueId: string, verb: 'pause' | 'resume') {
  const q = await call(f.gw.url, 'GET', `/v1/queues/${queueId}`, { token: f.t.token });
  const r = await call(f.gw.url, 'POST', `/v1/queues/${queueId}:${verb}`, {
    token: f.t.token,
    key: ikey(verb),
    body: { expected_revision: q.body.data.queue.revision },
  });
  expect(r.status).toBe(200);
  return r.body.data.queue;
}

async function finish(w: any, a: any) {
  if (!a.started) await start(w, a.attempt_id);
  expect(await result(w, a.attempt_id, 'succeeded')).toMatchObject({ type: 'result.ok' });
}

describe('order', () => {
  it('priority 9 is assigned before priority 0 when both wait', async () => {
    const q = await createQueue(f);
    const low = await submit(f, q.id, { priority: 0 });
    const high = await submit(f, q.id, { priority: 9 });
    const { w } = await connect(f, [q.id], { capacity: 1 });
    const first = await w.next('task.assign');
    expect(first.task).toMatchObject({ id: high.id, priority: 9 });
    await finish(w, first);
    const second = await w.next('task.assign');
    expect(second.task).toMatchObject({ id: low.id, priority: 0 });
    await finish(w, second);
  });

  it('equal priority: the sessions of one node are served round-robin, one task at a time and in a batch', async () => {
    const q = await createQueue(f);
    const sessions = [await connect(f, [q.id], { capacity: 8 }), await connect(f, [q.id], { capacity: 8 }), await connect(f, [q.id], { capacity: 8 })];
    const assigned = async (ids: string[]) => {
      const got = new Map<string, number>();
      await waitFor(
        `${ids.length} assignments`,
        () => sessions.reduce((n, s) => n + s.w.frames.filter((x) => x.type === 'task.assign').length, 0) >= ids.length,
        {
          timeout: 10_000,
        },
      );
      sessions.forEach((s, i) => {
        const mine = s.w.frames.filter((x) => x.type === 'task.assign');
        s.w.frames.splice(0, s.w.frames.length, ...s.w.frames.filter((x) => x.type !== 'task.assign'));
        for (const a of mine) got.set(a.task.id, i);
      });
      expect(new Set(got.keys())).toEqual(new Set(ids));
      return [0, 1, 2].map((i) => [...got.values()].filter((x) => x === i).length);
    };
    // One at a time: each task is claimed by a round of its own; the three sessions take turns.
    const one: string[] = [];
    for (let i = 0; i < 6; i++) {
      one.push((await submit(f, q.id)).id);
      await waitFor('the assignment', () => sessions.some((s) => s.w.frames.some((x) => x.type === 'task.assign' && x.task.id === one[i])), {
        timeout: 10_000,
      });
    }
    expect(await assigned(one)).toEqual([2, 2, 2]);
    // Six at once (one batch, one round): two each.
    const r = await call(f.gw.url, 'POST', '/v1/tasks:batch', {
      token: f.t.token,
      body: { tasks: Array.from({ length: 6 }, () => taskBody(q.id, { idempotency_key: ikey('rr') })) },
    });
    expect(r.status, r.text).toBe(200);
    expect(await assigned(r.body.data.results.map((x: any) => x.data.task.id))).toEqual([2, 2, 2]);
  });

  it('a task whose not_before is in the future is not assigned until it is due', async () => {
    const q = await createQueue(f);
    const { w } = await connect(f, [q.id], { capacity: 2 });
    const task = await submit(f, q.id, { not_before: new Date(Date.now() + 3600_000).toISOString() });
    expect(task.not_before).not.toBeNull();
    await expectNoFrame(w, 'task.assign', 800);
    expect((await sqlTask(f, task.id)).state).toBe('WAITING');
    await makeDue(f, task.id);
    const a = await w.next('task.assign', 3000);
    expect(a.task.id).toBe(task.id);
    await finish(w, a);
  });
});

describe('paused queues', () => {
  it('a paused queue dispatches nothing; resume dispatches', async () => {
    const q = await createQueue(f);
    await pause(q.id, 'pause');
    const task = await submit(f, q.id);
    const { w } = await connect(f, [q.id], { capacity: 2 });
    await expectNoFrame(w, 'task.assign', 800);
    expect((await sqlTask(f, task.id)).state).toBe('WAITING');
    await pause(q.id, 'resume');
    const a = await w.next('task.assign', 3000);
    expect(a.task.id).toBe(task.id);
    await finish(w, a);
  });

  it('a paused queue does not hold back another queue of the same session (its backlog is not a candidate)', async () => {
    const paused = await createQueue(f);
    const open = await createQueue(f);
    await pause(paused.id, 'pause');
    // an older, higher-priority backlog on the paused queue, larger than the session's capacity
    for (let i = 0; i < 4; i++) await submit(f, paused.id, { priority: 9 });
    const task = await submit(f, open.id);
    const { w } = await connect(f, [paused.id, open.id], { capacity: 2 });
    const a = await w.next('task.assign', 3000);
    expect(a.task.id).toBe(task.id);
    await finish(w, a);
    await pause(paused.id, 'resume');
    for (let i = 0; i < 4; i++) await finish(w, await w.next('task.assign'));
  });
});

describe('permit limits', () => {
  it('queue max_active_attempts = 1: the second task waits until the first finishes', async () => {
    const q = await createQueue(f, { max_active_attempts: 1 });
    const { w } = await connect(f, [q.id], { capacity: 4 });
    const t1 = await submit(f, q.id);
    const t2 = await submit(f, q.id);
    const a1 = await w.next('task.assign');
    expect(a1.task.id).toBe(t1.id);
    await start(w, a1.attempt_id);
    await expectNoFrame(w, 'task.assign', 800);
    expect((await sqlTask(f, t2.id)).state).toBe('WAITING');
    const [[row]] = (await f.db.pool.query('SELECT active_attempts FROM queues WHERE id = ?', [q.id])) as any;
    expect(row.active_attempts).toBe(1);
    expect(await result(w, a1.attempt_id, 'succeeded')).toMatchObject({ task_state: 'SUCCEEDED' });
    const a2 = await w.next('task.assign', 3000);
    expect(a2.task.id).toBe(t2.id);
    await finish(w, a2);
  });

  it('a full queue does not hold back another queue of the same session', async () => {
    const full = await createQueue(f, { max_active_attempts: 1 });
    const other = await createQueue(f);
    const { w } = await connect(f, [full.id, other.id], { capacity: 3 });
    for (let i = 0; i < 4; i++) await submit(f, full.id, { priority: 9 });
    const first = await w.next('task.assign');
    expect(first.task.queue_id).toBe(full.id);
    const task = await submit(f, other.id);
    const a = await w.next('task.assign', 3000);
    expect(a.task.id).toBe(task.id);
    await finish(w, a);
    await finish(w, first);
    for (let i = 0; i < 3; i++) await finish(w, await w.next('task.assign'));
  });

  it('application max_active_attempts (set in SQL) limits likewise', async () => {
    const tenant = await newTenant(f.db);
    await f.db.pool.query('UPDATE applications SET max_active_attempts = 1 WHERE id = ?', [tenant.application_id]);
    const q1 = await createQueue(f, {}, tenant);
    const q2 = await createQueue(f, {}, tenant);
    const { w } = await connect(f, [q1.id, q2.id], { capacity: 4 }, tenant);
    const t1 = await submit(f, q1.id, {}, tenant);
    const a1 = await w.next('task.assign');
    expect(a1.task.id).toBe(t1.id);
    const t2 = await submit(f, q2.id, {}, tenant);
    await expectNoFrame(w, 'task.assign', 800);
    expect((await sqlTask(f, t2.id)).state).toBe('WAITING');
    const [[app]] = (await f.db.pool.query('SELECT active_attempts FROM applications WHERE id = ?', [tenant.application_id])) as any;
    expect(app.active_attempts).toBe(1);
    await finish(w, a1);
    const a2 = await w.next('task.assign', 3000);
    expect(a2.task.id).toBe(t2.id);
    await finish(w, a2);
  });

  describe('a lowered application limit holds for the grants that follow a release', () => {
    const appActive = async (id: string) => {
      const [[app]] = (await f.db.pool.query('SELECT active_attempts FROM applications WHERE id = ?', [id])) as any;
      return Number(app.active_attempts);
    };
    /** A session of a fresh tenant holding `n` RUNNING attempts (those of `tasks`), then the
     * application's limit lowered below them (what `orbit-admin quota set` writes). */
    async function overLimit(tasks: Record<string, unknown>[], capacity: number) {
      const tenant = await newTenant(f.db);
      const q = await createQueue(f, {}, tenant);
      const { w } = await connect(f, [q.id], { capacity, concurrency_keys: true }, tenant);
      const held = [];
      for (const over of tasks) {
        await submit(f, q.id, over, tenant);
        const a = await w.next('task.assign');
        await start(w, a.attempt_id);
        held.push(a);
      }
      await f.db.pool.query('UPDATE applications SET max_active_attempts = 1 WHERE id = ?', [tenant.application_id]);
      return { tenant, q, w, held };
    }

    // A released key (the session has a free slot for the key's next task) and a freed slot (the
    // session is full; the finished attempt's slot would go to the queue's next task).
    it.each<[string, Record<string, unknown>[], number, Record<string, unknown>]>([
      ["a released key's next task is not granted", [{ concurrency_key: 'quota/1' }, {}], 3, { concurrency_key: 'quota/1' }],
      ['a freed slot is not filled', [{}, {}], 2, {}],
    ])('%s over the limit; it runs once the count is under it', async (_what, tasks, capacity, nextOver) => {
      const { tenant, q, w, held } = await overLimit(tasks, capacity);
      const next = await submit(f, q.id, nextOver, tenant);
      expect(await result(w, held[0].attempt_id, 'succeeded')).toMatchObject({ type: 'result.ok' });
      expect((await sqlTask(f, next.id)).state).toBe('WAITING');
      expect(await appActive(tenant.application_id)).toBe(1);
      await expectNoFrame(w, 'task.assign', 300);
      await finish(w, { attempt_id: held[1].attempt_id, started: true });
      const a = await w.next('task.assign', 3000);
      expect(a.task.id).toBe(next.id);
      await finish(w, a);
    });
  });
});
