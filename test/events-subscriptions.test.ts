// Subscriptions and deliveries over raw HTTP against a real gateway and MariaDB: creation rules,
// ownership, pause/resume, lease/ack/history, pending_count, quota, retention gap.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { ALL_TYPES, ack, createSub, extraCredential, getSub, lease, makeEvents, postSub } from './support/events.js';
import { pruneEvents } from '../server/events/retention.js';
import { createQueue } from './support/dispatch-fixture.js';

const f = useGatewayFixture();

async function count(sql: string, args: unknown[] = []): Promise<number> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>(sql, args);
  return Number(rows[0]!.n);
}

describe('POST /v1/subscriptions', () => {
  it('creates at the committed watermark, owned by the creator; replays; same key other content → 409', async () => {
    const q = await createQueue(f, { name: 'sub-create', lease_seconds: 30 });
    await makeEvents(f.db.pool, f.t, q.id, 3);
    const [[head]] = (await f.db.pool.query('SELECT last_sequence FROM stream_heads WHERE namespace_id = ?', [f.t.namespace_id])) as any;
    const key = ikey();
    const body = { name: 'consumer-a', queue_id: q.id, event_types: ['task.failed', 'task.succeeded'] };
    const first = await call(f.gw.url, 'POST', '/v1/subscriptions', { token: f.t.token, key, body });
    expect(first.status, first.text).toBe(201);
    const s = first.body.data.subscription;
    expect(first.body.data.deduplicated).toBe(false);
    expect(s).toMatchObject({
      name: 'consumer-a',
      queue_id: q.id,
      event_types: ['task.succeeded', 'task.failed'],
      enabled: true,
      paused: false,
      pending_count: 0,
      revision: '1',
    });
    expect(s.cursor).toBe(String(head.last_sequence));
    expect(s.retired_at).toBeUndefined();
    expect(s.retired_sequence).toBeUndefined();
    expect(s.id).toMatch(/^[0-9a-f]{32}$/);
    // Key order and the order of event_types do not matter.
    const again = await postSub(f.gw.url, f.t.token, { event_types: ['task.succeeded', 'task.failed'], queue_id: q.id, name: 'consumer-a' }, key);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual({ subscription: s, deduplicated: true });
    const other = await call(f.gw.url, 'POST', '/v1/subscriptions', { token: f.t.token, key, body: { ...body, name: 'consumer-b' } });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    expect(await count('SELECT COUNT(*) AS n FROM subscriptions WHERE namespace_id = ?', [f.t.namespace_id])).toBe(1);
    const [[own]] = (await f.db.pool.query('SELECT owner_credential_id FROM subscriptions WHERE id = ?', [s.id])) as any;
    const [[cred]] = (await f.db.pool.query('SELECT id FROM credentials WHERE namespace_id = ? ORDER BY created_at LIMIT 1', [f.t.namespace_id])) as any;
    expect(own.owner_credential_id).toBe(cred.id);
    expect(await count(`SELECT COUNT(*) AS n FROM audit_log WHERE action = 'subscription.create' AND target_id = ?`, [s.id])).toBe(1);
  });

  it('refuses bad input with 400 and no receipt; names are unique forever (409 STATE_CONFLICT)', async () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ name: 'x', queue_id: f.t.queue_id, event_types: [] }, 'event_types'],
      [{ name: 'x', queue_id: f.t.queue_id, event_types: ['task.started'] }, 'event_types.0'],
      [{ name: 'x', queue_id: f.t.queue_id, event_types: ['task.failed', 'task.failed'] }, 'event_types'],
      [{ name: 'Upper', queue_id: f.t.queue_id, event_types: ['task.failed'] }, 'name'],
      [{ name: '', queue_id: f.t.queue_id, event_types: ['task.failed'] }, 'name'],
      [{ name: 'a'.repeat(65), queue_id: f.t.queue_id, event_types: ['task.failed'] }, 'name'],
      [{ name: 'x', queue_id: f.t.queue_id, event_types: ['task.failed'], extra: 1 }, ''],
      [{ queue_id: f.t.queue_id, event_types: ['task.failed'] }, ''],
    ];
    const key = ikey();
    for (const [body] of bad) {
      const r = await call(f.gw.url, 'POST', '/v1/subscriptions', { token: f.t.token, key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.code).toBe('INVALID_ARGUMENT');
    }
    const noKey = await call(f.gw.url, 'POST', '/v1/subscriptions', {
      token: f.t.token,
      body: { name: 'x', queue_id: f.t.queue_id, event_types: ['task.failed'] },
    });
    expect(noKey.status).toBe(400);
    const withQuery = await call(f.gw.url, 'POST', '/v1/subscriptions?x=1', {
      token: f.t.token,
      key,
      body: { name: 'x', queue_id: f.t.queue_id, event_types: ['task.failed'] },
    });
    expect(withQuery.status).toBe(400);
    // The key was never spent on a failed validation.
    const ok = await postSub(f.gw.url, f.t.token, { name: 'unique-name', queue_id: f.t.queue_id, event_types: ['task.failed'] }, key);
    expect(ok.status).toBe(201);
    const dup = await postSub(f.gw.url, f.t.token, { name: 'unique-name', queue_id: f.t.queue_id, event_types: ['task.succeeded'] });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('STATE_CONFLICT');
  });

  it('authorization: scope 403, queue outside queue_ids 403, other namespace / unknown queue 404', async () => {
    const readOnly = await extraCredential(f.db.pool, f.t, ['events:read']);
    const r1 = await postSub(f.gw.url, readOnly.token, { name: 'nope', queue_id: f.t.queue_id, event_types: ['task.failed'] });
    expect(r1.status).toBe(403);
    expect(r1.body.error.code).toBe('PERMISSION_DENIED');
    const q2 = await createQueue(f, { name: 'limited-other', lease_seconds: 30 });
    const limited = await extraCredential(f.db.pool, f.t, ['events:manage', 'events:read'], [f.t.queue_id]);
    const r2 = await postSub(f.gw.url, limited.token, { name: 'nope', queue_id: q2.id, event_types: ['task.failed'] });
    expect(r2.status).toBe(403);
    const r3 = await postSub(f.gw.url, f.t.token, { name: 'nope', queue_id: 'f'.repeat(32), event_types: ['task.failed'] });
    expect(r3.status).toBe(404);
    const t2 = await newTenant(f.db);
    const r4 = await postSub(f.gw.url, t2.token, { name: 'nope', queue_id: f.t.queue_id, event_types: ['task.failed'] });
    expect(r4.status).toBe(404);
    expect(await count(`SELECT COUNT(*) AS n FROM subscriptions WHERE name = 'nope'`)).toBe(0);
  });

  it('the 65th non-retired subscription of a namespace → 429 QUOTA_EXCEEDED; retiring one frees a slot', async () => {
    const tq = await newTenant(f.db);
    const subs = [];
    for (let i = 0; i < 64; i++) subs.push(await createSub(f.gw.url, tq.token, { name: `quota-${i}`, queue_id: tq.queue_id, event_types: ['task.succeeded'] }));
    // paused ones count
    const p = await call(f.gw.url, 'POST', `/v1/subscriptions/${subs[0]!.id}:pause`, { token: tq.token, key: ikey(), body: { expected_revision: '1' } });
    expect(p.status).toBe(200);
    const over = await postSub(f.gw.url, tq.token, { name: 'quota-64', queue_id: tq.queue_id, event_types: ['task.succeeded'] });
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe('QUOTA_EXCEEDED');
    expect(await count('SELECT COUNT(*) AS n FROM subscriptions WHERE namespace_id = ?', [tq.namespace_id])).toBe(64);
    const ret = await call(f.gw.url, 'POST', `/v1/subscriptions/${subs[0]!.id}:retire`, {
      token: tq.token,
      key: ikey(),
      body: { expected_revision: '2', reason: 'free a slot' },
    });
    expect(ret.status, ret.text).toBe(200);
    // The retired name is still taken, even with a free slot.
    const reuse = await postSub(f.gw.url, tq.token, { name: 'quota-0', queue_id: tq.queue_id, event_types: ['task.succeeded'] });
    expect(reuse.status).toBe(409);
    expect(reuse.body.error.code).toBe('STATE_CONFLICT');
    await createSub(f.gw.url, tq.token, { name: 'quota-64', queue_id: tq.queue_id, event_types: ['task.succeeded'] });
    const full = await postSub(f.gw.url, tq.token, { name: 'quota-65', queue_id: tq.queue_id, event_types: ['task.succeeded'] });
    expect(full.status).toBe(429);
  });
});

describe('reads and ownership', () => {
  it('GET/list show only own subscriptions; another credential gets 404; scopes enforced', async () => {
    const s = await createSub(f.gw.url, f.t.token, { name: 'owned', queue_id: f.t.queue_id, event_types: ['task.succeeded'] });
    const other = await extraCredential(f.db.pool, f.t, ['events:manage', 'events:read']);
    for (const path of [`/v1/subscriptions/${s.id}`, `/v1/subscriptions/${s.id}/deliveries`]) {
      const r = await call(f.gw.url, 'GET', path, { token: other.token });
      expect(r.status, path).toBe(404);
      expect(r.body.error.code).toBe('NOT_FOUND');
    }
    for (const [path, body, key] of [
      [`/v1/subscriptions/${s.id}/deliveries:lease`, { max: 1, lease_seconds: 5 }, undefined],
      [`/v1/subscriptions/${s.id}/deliveries:ack`, { delivery_ids: ['a'.repeat(32)] }, undefined],
      [`/v1/subscriptions/${s.id}:pause`, { expected_revision: '1' }, ikey()],
      [`/v1/subscriptions/${s.id}:retire`, { expected_revision: '1', reason: 'x' }, ikey()],
    ] as const) {
      const r = await call(f.gw.url, 'POST', path, { token: other.token, body, key });
      expect(r.status, path).toBe(404);
    }
    const list = await call(f.gw.url, 'GET', '/v1/subscriptions', { token: other.token });
    expect(list.body.data.subscriptions).toEqual([]);
    const mine = await call(f.gw.url, 'GET', '/v1/subscriptions', { token: f.t.token });
    expect(mine.body.data.subscriptions.map((x: any) => x.id)).toContain(s.id);
    const noRead = await extraCredential(f.db.pool, f.t, ['events:manage']);
    expect((await call(f.gw.url, 'GET', '/v1/subscriptions', { token: noRead.token })).status).toBe(403);
    expect((await call(f.gw.url, 'GET', `/v1/subscriptions/${'0'.repeat(32)}`, { token: f.t.token })).status).toBe(404);
    expect((await call(f.gw.url, 'GET', '/v1/subscriptions/not-an-id', { token: f.t.token })).status).toBe(404);
  });

  it('pause/resume with expected_revision; a paused subscription leases nothing', async () => {
    const q = await createQueue(f, { name: 'pause-q', lease_seconds: 30 });
    const s = await createSub(f.gw.url, f.t.token, { name: 'pausable', queue_id: q.id, event_types: ['task.succeeded'] });
    await makeEvents(f.db.pool, f.t, q.id, 2);
    const stale = await call(f.gw.url, 'POST', `/v1/subscriptions/${s.id}:pause`, { token: f.t.token, key: ikey(), body: { expected_revision: '7' } });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('STATE_CONFLICT');
    const num = await call(f.gw.url, 'POST', `/v1/subscriptions/${s.id}:pause`, { token: f.t.token, key: ikey(), body: { expected_revision: 1 } });
    expect(num.status).toBe(400);
    const pk = ikey();
    const p = await call(f.gw.url, 'POST', `/v1/subscriptions/${s.id}:pause`, { token: f.t.token, key: pk, body: { expected_revision: '1' } });
    expect(p.status).toBe(200);
    expect(p.body.data.subscription).toMatchObject({ paused: true, revision: '2', pending_count: 2 });
    expect(await lease(f.gw.url, f.t.token, s.id)).toEqual([]);
    expect((await getSub(f.gw.url, f.t.token, s.id)).pending_count).toBe(2);
    const r = await call(f.gw.url, 'POST', `/v1/subscriptions/${s.id}:resume`, { token: f.t.token, key: ikey(), body: { expected_revision: '2' } });
    expect(r.status).toBe(200);
    expect(r.body.data.subscription).toMatchObject({ paused: false, revision: '3' });
    expect(await lease(f.gw.url, f.t.token, s.id)).toHaveLength(2);
    const replay = await call(f.gw.url, 'POST', `/v1/subscriptions/${s.id}:pause`, { token: f.t.token, key: pk, body: { expected_revision: '1' } });
    expect(replay.status).toBe(200);
    expect(replay.body.data).toEqual({ ...p.body.data, deduplicated: true });
  });
});

describe('lease, ack, history', () => {
  it('materializes matching events in sequence order; re-delivers an expired lease with the same id; ack is idempotent', async () => {
    const q = await createQueue(f, { name: 'lease-q', lease_seconds: 30 });
    const other = await createQueue(f, { name: 'lease-other', lease_seconds: 30 });
    const s = await createSub(f.gw.url, f.t.token, { name: 'leaser', queue_id: q.id, event_types: ['task.succeeded', 'task.needs_review'] });
    const a = await makeEvents(f.db.pool, f.t, q.id, 3, 'task.succeeded');
    await makeEvents(f.db.pool, f.t, q.id, 2, 'task.failed'); // not in the filter
    await makeEvents(f.db.pool, f.t, other.id, 2, 'task.succeeded'); // other queue
    const b = await makeEvents(f.db.pool, f.t, q.id, 2, 'task.needs_review');
    expect((await getSub(f.gw.url, f.t.token, s.id)).pending_count).toBe(5);
    const first = await lease(f.gw.url, f.t.token, s.id, 2, 5);
    expect(first.map((d) => d.sequence)).toEqual(a.slice(0, 2));
    for (const d of first) {
      expect(d).toMatchObject({ state: 'LEASED', attempts: 1 });
      expect(d.id).toMatch(/^[0-9a-f]{32}$/);
      expect(d.event).toMatchObject({ sequence: d.sequence, type: 'task.succeeded', queue_id: q.id, result: { outcome: 'succeeded' } });
      expect(Date.parse(d.lease_expires_at)).toBeGreaterThan(Date.now() - 5_000);
    }
    const sub1 = await getSub(f.gw.url, f.t.token, s.id);
    expect(sub1.pending_count).toBe(5);
    expect(BigInt(sub1.cursor)).toBeGreaterThanOrEqual(BigInt(b[1]!));
    // Nothing more for the leased ones until they expire; the rest come in order.
    const second = await lease(f.gw.url, f.t.token, s.id, 10, 5);
    expect(second.map((d) => d.sequence)).toEqual([a[2], ...b]);
    expect(second.at(-1).event.type).toBe('task.needs_review');
    expect(second.at(-1).event.result).toEqual({ outcome: 'unknown' });
    expect(await lease(f.gw.url, f.t.token, s.id, 10, 5)).toEqual([]);
    // Expire the first lease (backdated, not slept).
    await f.db.pool.query('UPDATE deliveries SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE id = ?', [first[0].id]);
    const hist = await call(f.gw.url, 'GET', `/v1/subscriptions/${s.id}/deliveries?state=EXPIRED`, { token: f.t.token });
    expect(hist.body.data.deliveries.map((d: any) => d.id)).toEqual([first[0].id]);
    const again = await lease(f.gw.url, f.t.token, s.id, 10, 5);
    expect(again).toHaveLength(1);
    expect(again[0]).toMatchObject({ id: first[0].id, sequence: first[0].sequence, attempts: 2, state: 'LEASED' });
    // ack
    const all = [again[0].id, first[1].id, ...second.map((d) => d.id)];
    expect(await ack(f.gw.url, f.t.token, s.id, all)).toBe(5);
    expect(await ack(f.gw.url, f.t.token, s.id, all)).toBe(0);
    expect(await ack(f.gw.url, f.t.token, s.id, ['b'.repeat(32)])).toBe(0);
    expect((await getSub(f.gw.url, f.t.token, s.id)).pending_count).toBe(0);
    // History: stable order by sequence, paged with an opaque cursor, state filter.
    const p1 = await call(f.gw.url, 'GET', `/v1/subscriptions/${s.id}/deliveries?limit=3`, { token: f.t.token });
    expect(p1.status).toBe(200);
    expect(p1.body.data.deliveries.map((d: any) => d.sequence)).toEqual(a);
    expect(p1.body.data.deliveries[0]).toMatchObject({ state: 'ACKED', attempts: 2 });
    expect(p1.body.data.deliveries[0].acked_at).toBeTruthy();
    const p2 = await call(f.gw.url, 'GET', `/v1/subscriptions/${s.id}/deliveries?limit=3&cursor=${p1.body.data.next_cursor}`, { token: f.t.token });
    expect(p2.body.data.deliveries.map((d: any) => d.sequence)).toEqual(b);
    expect(p2.body.data.next_cursor).toBeNull();
    const acked = await call(f.gw.url, 'GET', `/v1/subscriptions/${s.id}/deliveries?state=ACKED`, { token: f.t.token });
    expect(acked.body.data.deliveries).toHaveLength(5);
    for (const bad of ['state=DONE', 'limit=0', 'limit=501', 'cursor=zzz', 'other=1', 'state=ACKED&state=PENDING']) {
      const r = await call(f.gw.url, 'GET', `/v1/subscriptions/${s.id}/deliveries?${bad}`, { token: f.t.token });
      expect(r.status, bad).toBe(400);
    }
  });

  it('lease and ack validate their bodies and take no Idempotency-Key; a delivery never leased cannot be acked', async () => {
    const q = await createQueue(f, { name: 'lease-validate', lease_seconds: 30 });
    const s = await createSub(f.gw.url, f.t.token, { name: 'validator', queue_id: q.id, event_types: ALL_TYPES });
    for (const body of [
      { max: 0, lease_seconds: 5 },
      { max: 101, lease_seconds: 5 },
      { max: 1, lease_seconds: 4 },
      { max: 1, lease_seconds: 601 },
      { max: 1 },
      { max: 1, lease_seconds: 5, x: 1 },
    ]) {
      const r = await call(f.gw.url, 'POST', `/v1/subscriptions/${s.id}/deliveries:lease`, { token: f.t.token, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
    for (const body of [{ delivery_ids: [] }, { delivery_ids: ['xyz'] }, {}]) {
      const r = await call(f.gw.url, 'POST', `/v1/subscriptions/${s.id}/deliveries:ack`, { token: f.t.token, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
    await makeEvents(f.db.pool, f.t, q.id, 2, 'task.cancelled');
    const [d1] = await lease(f.gw.url, f.t.token, s.id, 1, 5);
    // the second one is PENDING (materialized, never handed out)
    const [[pending]] = (await f.db.pool.query(`SELECT id FROM deliveries WHERE subscription_id = ? AND state = 'PENDING'`, [s.id])) as any;
    expect(await ack(f.gw.url, f.t.token, s.id, [pending.id, d1.id])).toBe(1);
    const [[st]] = (await f.db.pool.query('SELECT state FROM deliveries WHERE id = ?', [pending.id])) as any;
    expect(st.state).toBe('PENDING');
    const noScope = await extraCredential(f.db.pool, f.t, ['events:manage']);
    expect(
      (await call(f.gw.url, 'POST', `/v1/subscriptions/${s.id}/deliveries:lease`, { token: noScope.token, body: { max: 1, lease_seconds: 5 } })).status,
    ).toBe(403);
  });
});

describe('retention', () => {
  it('a cursor behind the oldest retained event → 410 on lease and retire; pruning keeps unacked deliveries; one pruner at a time', async () => {
    const tr = await newTenant(f.db);
    const gap = await createSub(f.gw.url, tr.token, { name: 'gap', queue_id: tr.queue_id, event_types: ['task.succeeded'] });
    const seqs = await makeEvents(f.db.pool, tr, tr.queue_id, 10);
    const held = await createSub(f.gw.url, tr.token, { name: 'held', queue_id: tr.queue_id, event_types: ['task.succeeded'] });
    const later = await makeEvents(f.db.pool, tr, tr.queue_id, 5);
    // 'held' materializes and leases the newer events, acks the first 2.
    const ds = await lease(f.gw.url, tr.token, held.id, 100, 60);
    expect(ds.map((d) => d.sequence)).toEqual(later);
    expect(
      await ack(
        f.gw.url,
        tr.token,
        held.id,
        ds.slice(0, 2).map((d) => d.id),
      ),
    ).toBe(2);
    // All 15 events are older than retention.
    await f.db.pool.query('UPDATE result_events SET occurred_at = UTC_TIMESTAMP(3) - INTERVAL 8 DAY WHERE namespace_id = ?', [tr.namespace_id]);
    // Another node holds the pruning lock: this round skips.
    const other = await f.db.pool.getConnection();
    try {
      await other.query(`SELECT GET_LOCK(CONCAT('orbit.prune-events.', DATABASE()), 0)`);
      expect(await pruneEvents(f.db.pool, 7 * 86400)).toEqual({ ran: false, deleted: 0 });
    } finally {
      // released even when the expectation fails: a held connection fails the file at drop()
      await other.query(`SELECT RELEASE_LOCK(CONCAT('orbit.prune-events.', DATABASE()))`);
      other.release();
    }
    const r = await pruneEvents(f.db.pool, 7 * 86400);
    expect(r.ran).toBe(true);
    // Pruned up to (not including) the oldest unacked delivery's event.
    const [[min]] = (await f.db.pool.query('SELECT MIN(sequence) AS s FROM result_events WHERE namespace_id = ?', [tr.namespace_id])) as any;
    expect(String(min.s)).toBe(later[2]);
    const before = await f.db.pool.query('SELECT cursor_sequence, revision FROM subscriptions WHERE id = ?', [gap.id]);
    const l = await call(f.gw.url, 'POST', `/v1/subscriptions/${gap.id}/deliveries:lease`, { token: tr.token, body: { max: 10, lease_seconds: 5 } });
    expect(l.status).toBe(410);
    expect(l.body.error.code).toBe('EVENT_HISTORY_EXPIRED');
    const rt = await call(f.gw.url, 'POST', `/v1/subscriptions/${gap.id}:retire`, {
      token: tr.token,
      key: ikey(),
      body: { expected_revision: '1', reason: 'gone' },
    });
    expect(rt.status).toBe(410);
    expect(rt.body.error.code).toBe('EVENT_HISTORY_EXPIRED');
    expect(await f.db.pool.query('SELECT cursor_sequence, revision FROM subscriptions WHERE id = ?', [gap.id])).toEqual(before);
    expect(await count('SELECT COUNT(*) AS n FROM deliveries WHERE subscription_id = ?', [gap.id])).toBe(0);
    // The consumer that kept up still gets its unacked deliveries with their events.
    await f.db.pool.query('UPDATE deliveries SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE subscription_id = ?', [held.id]);
    const rest = await lease(f.gw.url, tr.token, held.id, 100, 5);
    expect(rest.map((d) => d.sequence)).toEqual(later.slice(2));
    expect(rest.every((d) => d.event && d.attempts === 2)).toBe(true);
    expect(seqs.length).toBe(10);
  });
});
