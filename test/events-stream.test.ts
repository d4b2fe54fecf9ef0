// The result stream under real transitions and races: one event per outcome transition, a
// watermark that never passes an uncommitted event, queue retirement racing submits, and 10 000
// events consumed by a subscriber that crashes and re-leases.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { hello, openRaw } from './support/raw-worker.js';
import { ack, createSub, getSub, lease, makeEvents, sequencesOf } from './support/events.js';
import { Tx } from '../server/db/pipeline.js';
import { appendResultEvents } from '../server/dispatch/ledger.js';
import { setTaskTime } from './support/waiting.js';
import { createQueue } from './support/dispatch-fixture.js';
import { waitFor } from './support/wait.js';
import { defaultTaskBody, postTask } from './support/submit.js';

const f = useGatewayFixture();

const submit = (queueId: string, over: Record<string, unknown> = {}, key = ikey('task')) =>
  postTask(f.gw.url, f.t.token, defaultTaskBody(queueId, { payload: {}, ...over }), key);

async function eventsOf(taskId: string): Promise<RowDataPacket[]> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT sequence, type, result FROM result_events WHERE task_id = ? ORDER BY sequence', [taskId]);
  return rows;
}

describe('one event per outcome transition', () => {
  it('SUCCEEDED, FAILED, NEEDS_REVIEW (and its resolution), retry, CANCELLED, DEADLINE_EXCEEDED', async () => {
    const q = await createQueue(f, { name: 'transitions', lease_seconds: 30 });
    const idle = await createQueue(f, { name: 'transitions-idle', lease_seconds: 30 });
    const s = await createSub(f.gw.url, f.t.token, {
      name: 'all-transitions',
      queue_id: q.id,
      event_types: ['task.succeeded', 'task.failed', 'task.cancelled', 'task.deadline_exceeded', 'task.needs_review'],
    });
    const sIdle = await createSub(f.gw.url, f.t.token, {
      name: 'idle-transitions',
      queue_id: idle.id,
      event_types: ['task.cancelled', 'task.deadline_exceeded'],
    });
    const w = await openRaw(f.gw.url, f.t.token);
    w.send(hello([q.id]));
    await w.next('hello.ok');
    const run = async (outcome: string, over: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => {
      const r = await submit(q.id, over);
      expect(r.status).toBe(201);
      const a = await w.next('task.assign');
      w.send({ type: 'start', attempt_id: a.attempt_id });
      await w.next('start.ok');
      w.send({ type: 'result', attempt_id: a.attempt_id, outcome, ...extra });
      const ok = await w.next('result.ok');
      return { task: r.body.data.task.id as string, ok };
    };
    const succ = await run('succeeded', {}, { output: { n: 1 } });
    const fail = await run('failed', {}, { error: { code: 'E', message: 'boom' } });
    const review = await run('unknown', {}, { error: { code: 'T', message: 'timeout' } });
    const retried = await run('retry', { max_attempts: 1 }, { error: { code: 'R', message: 'again' } });
    expect(retried.ok.task_state).toBe('FAILED');
    expect((await eventsOf(succ.task)).map((e) => [e.type, JSON.parse(e.result)])).toEqual([['task.succeeded', { outcome: 'succeeded', output: { n: 1 } }]]);
    expect((await eventsOf(fail.task)).map((e) => e.type)).toEqual(['task.failed']);
    expect((await eventsOf(review.task)).map((e) => [e.type, JSON.parse(e.result)])).toEqual([
      ['task.needs_review', { outcome: 'unknown', error: { code: 'T', message: 'timeout' } }],
    ]);
    expect((await eventsOf(retried.task)).map((e) => e.type)).toEqual(['task.failed']);
    // a retry that goes back to WAITING emits nothing
    const back = await submit(q.id, { max_attempts: 3 });
    const a = await w.next('task.assign');
    w.send({ type: 'start', attempt_id: a.attempt_id });
    await w.next('start.ok');
    w.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'retry', retry_after_ms: 60_000 });
    expect((await w.next('result.ok')).task_state).toBe('WAITING');
    expect(await eventsOf(back.body.data.task.id)).toEqual([]);
    // resolving the review is a second transition: one more event
    const res = await call(f.gw.url, 'POST', `/v1/tasks/${review.task}:resolve`, { token: f.t.token, key: ikey(), body: { resolution: 'succeeded' } });
    expect(res.status).toBe(200);
    expect((await eventsOf(review.task)).map((e) => e.type)).toEqual(['task.needs_review', 'task.succeeded']);
    // cancel and deadline on a queue nobody serves
    const c = await submit(idle.id);
    expect((await call(f.gw.url, 'POST', `/v1/tasks/${c.body.data.task.id}:cancel`, { token: f.t.token, key: ikey(), body: { reason: 'no' } })).status).toBe(
      200,
    );
    const d = await submit(idle.id, { deadline_seconds: 3600 });
    await setTaskTime(f.db.pool, d.body.data.task.id, 'deadline_at', 'UTC_TIMESTAMP(3) - INTERVAL 1 SECOND');
    await waitFor('deadline sweep', async () => (await eventsOf(d.body.data.task.id)).length > 0, 10_000);
    expect((await eventsOf(c.body.data.task.id)).map((e) => e.type)).toEqual(['task.cancelled']);
    expect((await eventsOf(d.body.data.task.id)).map((e) => e.type)).toEqual(['task.deadline_exceeded']);
    // The subscribers see exactly these, in sequence order.
    const got = await lease(f.gw.url, f.t.token, s.id, 100, 30);
    expect(got.map((x) => [x.event.task_id, x.event.type])).toEqual([
      [succ.task, 'task.succeeded'],
      [fail.task, 'task.failed'],
      [review.task, 'task.needs_review'],
      [retried.task, 'task.failed'],
      [review.task, 'task.succeeded'],
    ]);
    const idleGot = await lease(f.gw.url, f.t.token, sIdle.id, 100, 30);
    expect(idleGot.map((x) => x.event.type)).toEqual(['task.cancelled', 'task.deadline_exceeded']);
    w.close();
  });
});

describe('committed watermark', () => {
  it('an outcome transaction held open blocks later sequences; a consumer never skips it', async () => {
    const q = await createQueue(f, { name: 'watermark', lease_seconds: 30 });
    const s = await createSub(f.gw.url, f.t.token, { name: 'watermark', queue_id: q.id, event_types: ['task.succeeded'] });
    const [first] = await makeEvents(f.db.pool, f.t, q.id, 1);
    // Two transactions of the pool's kind (Tx: the ledger's event writes are queued and travel with
    // the transaction's next statement, here its COMMIT).
    const conns = await Promise.all([f.db.pool.getConnection(), f.db.pool.getConnection()]);
    const [a, b] = conns.map((c) => new Tx(c)) as [Tx, Tx];
    try {
      const ev = (taskId: string) => ({
        namespaceId: f.t.namespace_id,
        type: 'task.succeeded' as const,
        taskId,
        queueId: q.id,
        result: { outcome: 'succeeded' },
      });
      await a.query('START TRANSACTION');
      await appendResultEvents(a, [ev('a'.repeat(32))]);
      const [seqA] = await sequencesOf(a, f.t.namespace_id, ['a'.repeat(32)]);
      await b.query('START TRANSACTION');
      let bDone = false;
      // The append is queued; the read sends it, and it waits for A's head row.
      const bAppend = appendResultEvents(b, [ev('b'.repeat(32))])
        .then(() => sequencesOf(b, f.t.namespace_id, ['b'.repeat(32)]))
        .then((r) => {
          bDone = true;
          return r;
        });
      await new Promise((r) => setTimeout(r, 300));
      expect(bDone).toBe(false); // B cannot even allocate while A is open
      // Consumers see only what is committed: the first event, nothing of A.
      const l1 = await lease(f.gw.url, f.t.token, s.id, 100, 30);
      expect(l1.map((d) => d.sequence)).toEqual([first]);
      expect((await getSub(f.gw.url, f.t.token, s.id)).cursor).toBe(first);
      await a.query('COMMIT');
      const [seqB] = await bAppend;
      expect(BigInt(seqB!)).toBe(BigInt(seqA!) + 1n);
      // A committed, B still open: the watermark is A's sequence, not B's.
      const l2 = await lease(f.gw.url, f.t.token, s.id, 100, 30);
      expect(l2.map((d) => d.sequence)).toEqual([seqA!]);
      expect((await getSub(f.gw.url, f.t.token, s.id)).cursor).toBe(seqA!);
      await b.query('COMMIT');
      const l3 = await lease(f.gw.url, f.t.token, s.id, 100, 30);
      expect(l3.map((d) => d.sequence)).toEqual([seqB!]);
      expect(
        await ack(
          f.gw.url,
          f.t.token,
          s.id,
          [...l1, ...l2, ...l3].map((d) => d.id),
        ),
      ).toBe(3);
    } finally {
      for (const c of conns) c.destroy();
    }
  });
});

describe('queue retirement racing submits', () => {
  it('never both: either a submit lands and retirement is RESOURCE_BUSY, or retirement wins and submits get RESOURCE_RETIRED', async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < 6; round++) {
      const q = await createQueue(f, { name: `race-${round}`, lease_seconds: 30 });
      // Submits spread over `spread` ms from `start`; the retirement fires at 0. Early rounds let
      // submits land first, the last one lets the retirement win.
      const rounds: [start: number, spread: number][] = [
        [0, 0],
        [0, 20],
        [5, 40],
        [10, 10],
        [20, 60],
        [300, 50],
      ];
      const [start, spread] = rounds[round]!;
      const submits = Array.from({ length: 30 }, (_, i) => new Promise((r) => setTimeout(r, start + (spread * i) / 30)).then(() => submit(q.id)));
      const retire = Promise.resolve().then(() =>
        call(f.gw.url, 'POST', `/v1/queues/${q.id}:retire`, { token: f.t.token, key: ikey('retire'), body: { expected_revision: '1', reason: 'race' } }),
      );
      const [rr, ...ss] = await Promise.all([retire, ...submits]);
      const accepted = ss.filter((x) => x.status === 201).length;
      const refused = ss.filter((x) => x.status === 409 && x.body.error.code === 'RESOURCE_RETIRED').length;
      expect(accepted + refused, JSON.stringify(ss.map((x) => x.status))).toBe(30);
      const [[qr]] = (await f.db.pool.query('SELECT retired_at FROM queues WHERE id = ?', [q.id])) as any;
      const [[after]] = (await f.db.pool.query('SELECT COUNT(*) AS n FROM tasks WHERE queue_id = ? AND created_at >= ?', [
        q.id,
        qr.retired_at ?? '9999-01-01',
      ])) as any;
      const [[all]] = (await f.db.pool.query('SELECT COUNT(*) AS n FROM tasks WHERE queue_id = ?', [q.id])) as any;
      if (rr.status === 200) {
        // retirement won: it saw an empty queue, so nothing may have been accepted at all
        expect(accepted).toBe(0);
        expect(Number(all.n)).toBe(0);
        expect(qr.retired_at).not.toBeNull();
        outcomes.push('retired');
      } else {
        expect(rr.status, rr.text).toBe(409);
        expect(rr.body.error.code).toBe('RESOURCE_BUSY');
        expect(rr.body.error.message).toMatch(/unfinished tasks/);
        expect(refused).toBe(0);
        expect(accepted).toBe(30);
        expect(qr.retired_at).toBeNull();
        expect(Number(all.n)).toBe(30);
        outcomes.push('busy');
      }
      expect(Number(after.n)).toBe(0);
      if (rr.status === 200) {
        // A retired queue with tasks created after retired_at would be a bug (checked in SQL above).
        expect(refused).toBe(30);
      }
    }
    console.log(`retire races: ${outcomes.join(' ')}`);
    expect(outcomes).toContain('retired');
  });
});

describe('10 000 events, a consumer that crashes and re-leases', () => {
  it('acks every event exactly once and loses none', async () => {
    const q = await createQueue(f, { name: 'bulk', lease_seconds: 30 });
    const noise = await createQueue(f, { name: 'bulk-noise', lease_seconds: 30 });
    const s = await createSub(f.gw.url, f.t.token, { name: 'bulk', queue_id: q.id, event_types: ['task.succeeded', 'task.failed'] });
    const expected: string[] = [];
    const ackedIds = new Set<string>();
    let ackedTotal = 0;
    let crashedLeases = 0;
    /** Acks every delivery of a lease; returns how many the gateway acked. */
    const ackLeased = (ds: { id: string }[]) =>
      ack(
        f.gw.url,
        f.t.token,
        s.id,
        ds.map((d) => d.id),
      );
    const produce = async (i: number) => {
      expected.push(...(await makeEvents(f.db.pool, f.t, q.id, 900, 'task.succeeded')));
      expected.push(...(await makeEvents(f.db.pool, f.t, q.id, 100, 'task.failed')));
      if (i % 3 === 0) await makeEvents(f.db.pool, f.t, noise.id, 200, 'task.succeeded'); // other queue: filtered out
      if (i % 4 === 0) await makeEvents(f.db.pool, f.t, q.id, 50, 'task.cancelled'); // other type: filtered out
    };
    // Consumer 1 interleaves with production, acks most batches, drops some (as if it crashed
    // mid-batch), and finally crashes holding its last leases.
    for (let i = 0; i < 10; i++) {
      await produce(i);
      for (let k = 0; k < 6; k++) {
        const ds = await lease(f.gw.url, f.t.token, s.id, 100, 60);
        if (ds.length === 0) break;
        if (k % 3 === 2) {
          crashedLeases += ds.length;
          continue; // leased, never acked
        }
        const n = await ackLeased(ds);
        expect(n).toBe(ds.length);
        ackedTotal += n;
        for (const d of ds) ackedIds.add(d.id);
      }
    }
    expect(crashedLeases).toBeGreaterThan(0);
    expect((await getSub(f.gw.url, f.t.token, s.id)).pending_count).toBe(10_000 - ackedTotal);
    // The dropped leases run out (backdated instead of slept).
    await f.db.pool.query(`UPDATE deliveries SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE subscription_id = ? AND state = 'LEASED'`, [
      s.id,
    ]);
    // Consumer 2 drains everything.
    let redelivered = 0;
    for (;;) {
      const ds = await lease(f.gw.url, f.t.token, s.id, 100, 60);
      if (ds.length === 0) break;
      for (let i = 1; i < ds.length; i++) expect(BigInt(ds[i]!.sequence) > BigInt(ds[i - 1]!.sequence)).toBe(true);
      redelivered += ds.filter((d) => d.attempts > 1).length;
      const n = await ackLeased(ds);
      expect(n).toBe(ds.length);
      ackedTotal += n;
      for (const d of ds) {
        expect(ackedIds.has(d.id)).toBe(false);
        ackedIds.add(d.id);
      }
    }
    expect(redelivered).toBe(crashedLeases);
    expect(ackedTotal).toBe(10_000);
    expect(ackedIds.size).toBe(10_000);
    const [rows] = await f.db.pool.query<RowDataPacket[]>(`SELECT sequence, state, attempts FROM deliveries WHERE subscription_id = ? ORDER BY sequence`, [
      s.id,
    ]);
    expect(rows.map((r) => String(r.sequence))).toEqual(expected);
    expect(rows.every((r) => r.state === 'ACKED')).toBe(true);
    expect(rows.filter((r) => r.attempts === 2).length).toBe(crashedLeases);
    const sub = await getSub(f.gw.url, f.t.token, s.id);
    expect(sub.pending_count).toBe(0);
    // Settled: the subscription can now be retired.
    const r = await call(f.gw.url, 'POST', `/v1/subscriptions/${s.id}:retire`, {
      token: f.t.token,
      key: ikey(),
      body: { expected_revision: sub.revision, reason: 'consumed' },
    });
    expect(r.status, r.text).toBe(200);
  }, 120_000);
});
