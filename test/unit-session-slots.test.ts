// A session's slot accounting (server/gateway/session-slots.ts), without a database or a socket:
// a committed claim's attempts taken as held, no slot free while the session takes no work, and a
// capacity lowered while a claim round is out.
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

describe('SessionSlots: claimed attempts', () => {
  it('take: the committed attempts become held, the rest of the capacity stays free', () => {
    const { slots } = slotsOf(4);
    const a = [assignment('q1'), assignment('q2')];
    expect(slots.take(a)).toEqual(a);
    expect([...slots.held]).toEqual([
      [a[0]!.attemptId, 'q1'],
      [a[1]!.attemptId, 'q2'],
    ]);
    expect(slots.free).toBe(2);
  });

  it('no slot is free while the session takes no work (closed, draining, not answering pings)', () => {
    const { slots, open } = slotsOf(2);
    open.now = false;
    expect(slots.free).toBe(0);
    open.now = true;
    expect(slots.free).toBe(2);
  });

  it('a capacity lowered while a claim round is out: take holds only what fits now, and returns that', () => {
    const { slots } = slotsOf(4);
    slots.take([assignment()]);
    slots.capacity = 2;
    const got = [assignment(), assignment(), assignment()];
    expect(slots.take(got)).toEqual(got.slice(0, 1));
    expect(slots.held.size).toBe(2);
    expect(slots.free).toBe(0);
    slots.capacity = 5;
    expect(slots.free).toBe(3);
  });
});

describe('SessionSlots: held attempts', () => {
  it('drop frees a result’s slot; resume holds hello’s resumed attempts', () => {
    const { slots } = slotsOf(3);
    slots.resume([
      { attempt_id: 'r1', queueId: 'q1' },
      { attempt_id: 'r2', queueId: 'q2' },
    ]);
    expect(slots.held.get('r2')).toBe('q2');
    expect(slots.free).toBe(1);
    expect(slots.drop('r1')).toBe(true);
    expect(slots.drop('r1')).toBe(false);
    expect(slots.free).toBe(2);
  });
});
