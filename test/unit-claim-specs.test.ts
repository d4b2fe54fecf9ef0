// The claim round's planning step without a database: specsFor (server/dispatch/claim.ts) turns
// the sessions asking for work and the queues' permit hints into one candidate read per queue.
import { describe, expect, it } from 'vitest';
import { ROUND_MAX_PER_SESSION, specsFor, type ClaimRequest } from '../server/dispatch/claim.js';
import type { ClaimSession } from '../server/dispatch/grant.js';
import { byClaimOrder, type PermitHint } from '../server/db/claim-sql.js';
import { sessionAccepts } from '../server/dispatch/grant.js';

const NS = 'n'.repeat(32);
const session = (over: Partial<ClaimSession> = {}): ClaimSession => ({
  namespaceId: NS,
  applicationId: 'a'.repeat(32),
  workerId: 'w',
  sessionId: 's',
  credentialId: 'c',
  queueIds: ['q1'],
  handlers: null,
  concurrencyKeys: false,
  ...over,
});
const req = (free: number, over: Partial<ClaimSession> = {}): ClaimRequest => ({ session: session(over), free });
const hint = (id: string, free: number, namespace_id = NS): PermitHint => ({ id, namespace_id, free, lease_seconds: 30 });

describe('specsFor', () => {
  it('one read per queue with demand: min(queue permits, sessions’ free slots), fetched twice over, at most twice a round’s grant per session', () => {
    const specs = specsFor([req(3), req(2, { queueIds: ['q1', 'q2'] })], [hint('q1', 100), hint('q2', 1), hint('q3', 50)]);
    expect(specs).toEqual([
      { queueId: 'q1', namespaceId: NS, limit: 10, handlers: null, keyed: false },
      { queueId: 'q2', namespaceId: NS, limit: 2, handlers: null, keyed: false },
    ]);
    expect(specsFor([req(500)], [hint('q1', 5000)])[0]!.limit).toBe(1000);
    expect(specsFor([req(5000)], [hint('q1', 5000)])[0]!.limit).toBe(2 * ROUND_MAX_PER_SESSION);
  });

  it('no read for a queue without free permits, without free slots, or of another namespace', () => {
    expect(specsFor([req(4)], [hint('q1', 0)])).toEqual([]);
    expect(specsFor([req(0)], [hint('q1', 9)])).toEqual([]);
    expect(specsFor([req(4)], [hint('q1', 9, 'm'.repeat(32))])).toEqual([]);
  });

  it('handlers: the union of the sessions’ filters; one session without a filter reads every handler', () => {
    const a = req(1, { handlers: [{ handler: 'h', versions: ['v1'] }] });
    const b = req(1, {
      handlers: [
        { handler: 'h', versions: ['v2'] },
        { handler: 'g', versions: ['v1'] },
      ],
    });
    expect(specsFor([a, b], [hint('q1', 9)])[0]!.handlers).toEqual([
      { handler: 'h', versions: ['v1', 'v2'] },
      { handler: 'g', versions: ['v1'] },
    ]);
    expect(specsFor([a, req(1)], [hint('q1', 9)])[0]!.handlers).toBeNull();
  });

  it('keyed tasks are read when any session on the queue declared concurrency_keys', () => {
    expect(specsFor([req(1), req(1, { concurrencyKeys: true })], [hint('q1', 9)])[0]!.keyed).toBe(true);
    expect(specsFor([req(1), req(1)], [hint('q1', 9)])[0]!.keyed).toBe(false);
  });
});

// The one rule of which session takes which task (grant.ts), for a claim round and a hand-off alike.
describe('sessionAccepts', () => {
  const task = { namespace_id: NS, queue_id: 'q1', handler: 'h', handler_version: '1', concurrency_key: null as Buffer | null };
  const keyed = Buffer.from('k');
  it('its queue in its namespace, its handler version, and the key capability for a keyed task', () => {
    expect(sessionAccepts(session(), task)).toBe(true);
    expect(sessionAccepts(session(), { ...task, queue_id: 'q2' })).toBe(false);
    expect(sessionAccepts(session(), { ...task, namespace_id: 'm'.repeat(32) })).toBe(false);
    expect(sessionAccepts(session(), { ...task, concurrency_key: keyed })).toBe(false);
    expect(sessionAccepts(session({ concurrencyKeys: true }), { ...task, concurrency_key: keyed })).toBe(true);
    const handlers = [{ handler: 'h', versions: ['1', '2'] }];
    expect(sessionAccepts(session({ handlers }), task)).toBe(true);
    expect(sessionAccepts(session({ handlers }), { ...task, handler_version: '3' })).toBe(false);
    expect(sessionAccepts(session({ handlers }), { ...task, handler: 'g' })).toBe(false);
  });
});

describe('byClaimOrder', () => {
  it('priority high first, then seq — compared as integers whether bigint or BIGINT string', () => {
    const rows = [
      { id: 'a', priority: 0, seq: '10' },
      { id: 'b', priority: 0, seq: '9' },
      { id: 'c', priority: 5, seq: '100' },
      { id: 'd', priority: 0, seq: 2n ** 63n },
    ];
    expect(rows.sort(byClaimOrder).map((r) => r.id)).toEqual(['c', 'b', 'a', 'd']);
  });
});
