// A session's slot accounting (server/gateway/session-slots.ts), without a database or a socket:
// reservations for claim rounds, their commit and release (once each: a second release, or one
// after the session closed, changes nothing), and a capacity lowered while a reservation is out.
import { describe, expect, it } from 'vitest';
import { SessionSlots } from '../server/gateway/session-slots.js';
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
    const r = slots.reserve(64)!;
    expect(r.size).toBe(3);
    expect(slots.free).toBe(0);
    expect(slots.reserve(1)).toBeNull();
    r.release();
    expect(slots.free).toBe(3);
  });

  it('shrink: a claim round gives back the slots its candidate read cannot fill; never grows, nor once ended', () => {
    const { slots } = slotsOf(4);
    const r = slots.reserve(64)!;
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
    const round = slots.reserve(2)!;
    const other = slots.reserve(1)!;
    expect(slots.free).toBe(1);
    other.release();
    other.release();
    expect(slots.free).toBe(2);
    const got = [assignment()];
    round.commit(got);
    round.release();
    expect(slots.held.size).toBe(1);
    expect(slots.free).toBe(3);
    expect(() => round.commit([assignment()])).toThrow(/after it ended/);
    expect(() => other.commit([assignment()])).toThrow(/after it ended/);
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

  it('fullButForRound: full except for the slots of a claim round in flight', () => {
    const { slots } = slotsOf(2);
    holding(slots, 1);
    const round = slots.reserve(1)!;
    expect(slots.free).toBe(0);
    expect(slots.fullButForRound).toBe(false);
    round.release();
    holding(slots, 1);
    expect(slots.fullButForRound).toBe(true);
  });
});

describe('SessionSlots: held attempts', () => {
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
