// A session's slot accounting (server/gateway/session-slots.ts) and the refill walk
// (server/dispatch/refill.ts walkRefills), without a database or a socket: reservations for
// claim rounds, hand-offs and refills, their commit and release (once each: a second release, or
// one after the session closed, changes nothing), and a capacity lowered while a reservation is
// out.
import { describe, expect, it } from 'vitest';
import { SessionSlots } from '../server/gateway/session-slots.js';
import { walkRefills } from '../server/dispatch/refill.js';
import type { Assignment } from '../server/dispatch/grant.js';

/** Slots of a session with `capacity` that takes work while `open.now`. */
function slotsOf(capacity: number) {
  const open = { now: true };
  const slots = new SessionSlots(() => open.now);
  slots.capacity = capacity;
  return { slots, open };
}

let seq = 0;
/** A committed grant's assignment (only the fields the accounting reads matter). */
function assignment(queueId = 'q'): Assignment {
  const attemptId = `attempt-${++seq}`;
  return {
    attemptId,
    attemptNo: 1,
    leaseExpiresAt: '2026-01-01T00:00:00.000Z',
    queueId,
    concurrencyToken: null,
    task: { id: `task-${seq}` } as Assignment['task'],
    payloadJson: '{}',
  };
}

/** `n` attempts held through a committed reservation. */
function holding(slots: SessionSlots, n: number): Assignment[] {
  const got = Array.from({ length: n }, () => assignment());
  expect(slots.reserve(n)!.commit(got)).toEqual(got);
  return got;
}

describe('SessionSlots: reservations', () => {
  it('reserve takes at most the free slots, and none when none is free', () => {
    const { slots } = slotsOf(3);
    const r = slots.reserve(64, true)!;
    expect(r.size).toBe(3);
    expect(r.replaces).toBeNull();
    expect(slots.free).toBe(0);
    expect(slots.reserve(1)).toBeNull();
    r.release();
    expect(slots.free).toBe(3);
  });

  it("shrink: a claim round gives back the slots its candidate read cannot fill; never grows, nor a refill's, nor once ended", () => {
    const { slots } = slotsOf(4);
    const r = slots.reserve(64, true)!;
    expect(slots.free).toBe(0);
    r.shrink(1);
    expect(r.size).toBe(1);
    expect(slots.free).toBe(3);
    expect(slots.fullButForRound).toBe(false);
    r.shrink(3);
    expect(r.size).toBe(1);
    expect(slots.free).toBe(3);
    const a = [assignment()];
    expect(r.commit(a)).toEqual(a);
    r.shrink(0);
    expect(slots.free).toBe(3);
    const refill = slots.reserveFreed(a[0]!.attemptId)!;
    refill.shrink(0);
    expect(refill.size).toBe(1);
    refill.release();
    expect(slots.free).toBe(3);
  });

  it('commit: the committed attempts become held, the unused reserved slots are free again', () => {
    const { slots } = slotsOf(4);
    const r = slots.reserve(3)!;
    const a = [assignment('q1'), assignment('q2')];
    expect(r.commit(a)).toEqual(a);
    expect([...slots.held]).toEqual([
      [a[0]!.attemptId, 'q1'],
      [a[1]!.attemptId, 'q2'],
    ]);
    expect(slots.free).toBe(2);
  });

  it('a reservation ends once: a second release, or a release after commit, changes nothing; a second commit throws', () => {
    const { slots } = slotsOf(4);
    const round = slots.reserve(2, true)!;
    const handoff = slots.reserve(1)!;
    expect(slots.free).toBe(1);
    handoff.release();
    handoff.release();
    expect(slots.free).toBe(2);
    const got = [assignment()];
    round.commit(got);
    round.release();
    expect(slots.held.size).toBe(1);
    expect(slots.free).toBe(3);
    expect(() => round.commit([assignment()])).toThrow(/after it ended/);
    expect(() => handoff.commit([assignment()])).toThrow(/after it ended/);
    expect(slots.held.size).toBe(1);
    expect(slots.free).toBe(3);
  });

  it('no slot is free while the session takes no work (closed, draining, not answering pings), and a release after it closed only gives its slots back', () => {
    const { slots, open } = slotsOf(2);
    const r = slots.reserve(2)!;
    open.now = false;
    expect(slots.free).toBe(0);
    expect(slots.reserve(1)).toBeNull();
    r.release();
    r.release();
    expect(slots.room).toBe(2);
    expect(slots.free).toBe(0);
    open.now = true;
    expect(slots.free).toBe(2);
  });

  it('a capacity lowered while a reservation is out: its commit holds only what fits now, and returns that', () => {
    const { slots } = slotsOf(4);
    holding(slots, 1);
    const r = slots.reserve(3)!;
    slots.capacity = 2;
    const got = [assignment(), assignment(), assignment()];
    expect(r.commit(got)).toEqual(got.slice(0, 1));
    expect(slots.held.size).toBe(2);
    expect(slots.free).toBe(0);
    slots.capacity = 5;
    expect(slots.free).toBe(3);
  });

  it('fullButForRound: full except for the slots of a claim round in flight, not of a hand-off', () => {
    const { slots } = slotsOf(2);
    holding(slots, 1);
    const round = slots.reserve(1, true)!;
    expect(slots.free).toBe(0);
    expect(slots.fullButForRound).toBe(false);
    round.release();
    const handoff = slots.reserve(1)!;
    expect(slots.fullButForRound).toBe(true);
    handoff.release();
  });
});

describe('SessionSlots: refills', () => {
  it('reserveFreed keeps the finishing attempt in its slot until commit, which swaps it for the new one', () => {
    const { slots } = slotsOf(1);
    const [old] = holding(slots, 1);
    const r = slots.reserveFreed(old!.attemptId)!;
    expect(r).toMatchObject({ size: 1, replaces: old!.attemptId });
    expect(slots.reserveFreed(old!.attemptId)).toBeNull(); // one reservation per slot
    expect(slots.reserveFreed('not-held')).toBeNull();
    // The reconciler sees the attempt finished first: the slot stays taken for the refill.
    expect(slots.drop(old!.attemptId)).toBe(false);
    expect(slots.free).toBe(0);
    const next = assignment();
    expect(r.commit([next])).toEqual([next]);
    expect([...slots.held.keys()]).toEqual([next.attemptId]);
    r.release();
    expect([...slots.held.keys()]).toEqual([next.attemptId]);
  });

  it('a released refill reservation leaves the attempt held; its drop then frees the slot', () => {
    const { slots } = slotsOf(2);
    const [a] = holding(slots, 1);
    const r = slots.reserveFreed(a!.attemptId)!;
    r.release();
    r.release();
    expect(slots.held.has(a!.attemptId)).toBe(true);
    expect(slots.free).toBe(1);
    expect(slots.drop(a!.attemptId)).toBe(true);
    expect(slots.drop(a!.attemptId)).toBe(false);
    expect(slots.free).toBe(2);
  });

  it('no refill while the session takes no work or is over a lowered capacity; a refill committed after the session stopped taking work vacates the slot and holds nothing', () => {
    const { slots, open } = slotsOf(2);
    const [a, b] = holding(slots, 2);
    slots.capacity = 1;
    expect(slots.reserveFreed(a!.attemptId)).toBeNull();
    slots.capacity = 2;
    open.now = false;
    expect(slots.reserveFreed(a!.attemptId)).toBeNull();
    open.now = true;
    const r = slots.reserveFreed(b!.attemptId)!;
    open.now = false;
    // Session.deliver commits nothing into a session that no longer takes work.
    expect(r.commit([])).toEqual([]);
    expect([...slots.held.keys()]).toEqual([a!.attemptId]);
  });

  it('finish frees a result’s slot; resume holds hello’s resumed attempts', () => {
    const { slots } = slotsOf(3);
    slots.resume([
      { attempt_id: 'r1', queueId: 'q1' },
      { attempt_id: 'r2', queueId: 'q2' },
    ]);
    expect(slots.held.get('r2')).toBe('q2');
    expect(slots.free).toBe(1);
    slots.finish('r1');
    expect(slots.free).toBe(2);
  });
});

describe('walkRefills: the refill walk of a batch', () => {
  const row = (id: string, key: string | null = null) => ({ id, concurrency_key: key });
  const cand = (id: string, spec: number, priority = 0, seq = 0n) => ({ id, spec, priority, seq });

  it('each group takes its candidates in claim order (priority, then seq), one per freed slot, oldest slot first', () => {
    const rows = new Map([row('a'), row('b'), row('c')].map((r) => [r.id, r]));
    const ids = [cand('c', 0, 0, 3n), cand('a', 0, 0, 1n), cand('b', 0, 5, 9n)];
    const picks = walkRefills([{ slots: ['old1', 'old2'] }], ids, rows);
    expect(picks.map((p) => [p.slot, p.row.id])).toEqual([
      ['old1', 'b'],
      ['old2', 'a'],
    ]);
  });

  it('stops at the first keyed candidate: a free key is the claim round’s, and unkeyed tasks behind it do not pass it', () => {
    const rows = new Map([row('a'), row('k', 'key'), row('b')].map((r) => [r.id, r]));
    const ids = [cand('a', 0, 0, 1n), cand('k', 0, 0, 2n), cand('b', 0, 0, 3n)];
    expect(walkRefills([{ slots: ['o1', 'o2', 'o3'] }], ids, rows).map((p) => p.row.id)).toEqual(['a']);
  });

  it('passes over candidates not locked (another claimer holds them) and those an earlier group took', () => {
    const rows = new Map([row('a'), row('c')].map((r) => [r.id, r]));
    // 'b' was not locked; 'a' is a candidate of both groups (two sessions on one queue).
    const ids = [cand('a', 0, 0, 1n), cand('a', 1, 0, 1n), cand('b', 1, 0, 2n), cand('c', 1, 0, 3n)];
    const picks = walkRefills([{ slots: ['s0'] }, { slots: ['s1'] }], ids, rows);
    expect(picks.map((p) => [p.group, p.slot, p.row.id])).toEqual([
      [0, 's0', 'a'],
      [1, 's1', 'c'],
    ]);
  });

  it('a group with more freed slots than candidates leaves the rest unused (their reservations are released by the caller)', () => {
    const rows = new Map([row('a')].map((r) => [r.id, r]));
    expect(walkRefills([{ slots: ['o1', 'o2'] }], [cand('a', 0)], rows)).toEqual([{ group: 0, slot: 'o1', row: { id: 'a', concurrency_key: null } }]);
    expect(walkRefills([{ slots: ['o1'] }], [], rows)).toEqual([]);
  });
});
