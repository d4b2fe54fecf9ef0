// The cost of one hot-key turnover, counted: the result of attempt A on key K commits with K
// handed to the next task of K (server/dispatch/handoff.ts), attempt B is assigned, and B's start
// commits. On the real frame committer, sessions and database (test/support/session-host.ts), with
// the dispatcher stopped so that nothing but the turnover runs: the transactions and round trips
// (transactionStats, what /metrics reports) and the statements each transaction sent (the
// pool's tap, bench/pool-tap.ts, sees every one, START TRANSACTION and COMMIT included). On main
// before this count (e540615) the result transaction was 7 round trips (the same 16 statements):
// docs/benchmarks.md, "The hot-key turnover".
// The same turnover after a retry: the retry's waiting row is written in the ledger's key phase,
// after the key row (lock order; test/waiting-heads.test.ts shows the deadlock of the other order).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { hashToken } from '../server/admin/access.js';
import { findCredentialByTokenHash, type Credential } from '../server/db/credentials.js';
import { transactionStats } from '../server/db/pipeline.js';
import { PoolTap } from '../bench/pool-tap.js';
import { runFrameBatch } from '../server/dispatch/frame-committer.js';
import type { FrameCommand } from '../server/dispatch/frame-commands.js';
import { sessionAccepts } from '../server/dispatch/grant.js';
import type { HandoffHost } from '../server/dispatch/handoff.js';
import { normalizeSubmit } from '../server/dispatch/submit-input.js';
import type { Session } from '../server/gateway/session.js';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { assertPermitInvariants } from './support/invariants.js';
import { keyRow } from './support/keys-helpers.js';
import { hello, openRaw, type RawWorker } from './support/raw-worker.js';
import { InProcessHost } from './support/session-host.js';

let f: { db: TestDb; tenant: CredentialsFile; live: Credential; host: InProcessHost; url: string };
const sockets: RawWorker[] = [];
/** On the file's pool: records the statements of a turnover. */
const tap = new PoolTap();

beforeAll(async () => {
  const db = await createTestDb();
  tap.attach(db.pool);
  const tenant = await newTenant(db, { queues: ['hot'] });
  const host = new InProcessHost(db.pool);
  f = { db, tenant, live: (await findCredentialByTokenHash(db.pool, hashToken(tenant.token)))!, host, url: await host.listen() };
});
afterEach(async () => {
  tap.setHook(null);
  for (const w of sockets.splice(0)) w.close();
  await assertPermitInvariants(f.db.pool);
});
/** Hosts a test started of its own. */
const hosts: InProcessHost[] = [];
afterAll(async () => {
  for (const h of hosts) await h.close();
  await f?.host.close();
  await f?.db.drop();
});

/** The gateway's hand-off host narrowed to one session (ws-gateway.ts handoffHost). */
const handoffTo = (s: Session): HandoffHost => ({
  reserve: (t) => (sessionAccepts(s.claim, t) ? ((slot) => slot && { session: s.claim, slot })(s.slots.reserve(1)) : null),
  reserveFreed: () => null,
  deliver: (d) => s.deliver(d.slot, [d.a]),
});

/** runFrameBatch and what it cost: transactions, round trips, statements sent. */
async function counted(cmds: FrameCommand[], host?: HandoffHost) {
  const statements: string[] = [];
  tap.setHook((sql) => (statements.push(sql.trimStart().split(/\s+/).slice(0, 3).join(' ')), null));
  const before = { ...transactionStats };
  try {
    const r = await runFrameBatch(f.db.pool, cmds, host);
    return { r, transactions: transactionStats.transactions - before.transactions, roundTrips: transactionStats.roundTrips - before.roundTrips, statements };
  } finally {
    tap.setHook(null);
  }
}

/** A session on `host` (capacity 2), two tasks submitted on key `key` and the first one assigned;
 * then nothing but the test runs (no claim round, no poll). */
async function twoOnKey(host: InProcessHost, url: string, key: string) {
  const created = host.nextSession();
  const w = await openRaw(url, f.tenant.token);
  sockets.push(w);
  const session = await created;
  const h = hello([f.tenant.queues.hot!], { capacity: 2, concurrency_keys: true });
  w.send(h);
  await w.next('hello.ok');
  const who = { namespaceId: f.tenant.namespace_id, workerId: h.worker_id, credentialId: f.live.id };
  for (const i of [1, 2]) {
    const prepared = normalizeSubmit({
      queue_id: f.tenant.queues.hot!,
      handler: 'h',
      handler_version: 'v1',
      payload_version: 'v1',
      payload: { i },
      concurrency_key: key,
    });
    const r = await host.submitter.submit({ credential: f.live, key: `${key}-${i}`, prepared });
    if (!r.ok) throw r.error;
  }
  const a = await w.next('task.assign');
  await host.dispatcher.idle();
  host.dispatcher.stop();
  return { w, session, who, a, queueId: f.tenant.queues.hot! };
}

describe('one hot-key turnover', () => {
  it('result with hand-off: 1 transaction of 3 round trips; the successor start: 1 of 1', async () => {
    const { w, session, who, a, queueId } = await twoOnKey(f.host, f.url, 'K');
    // A's start warms the queue's configuration cache (db/queue-config.ts), as on a busy node.
    expect((await counted([{ kind: 'start', who, attemptId: a.attempt_id, queueId }])).r.outcomes[0]).toMatchObject({ ok: true });

    const result = await counted(
      [{ kind: 'result', who, frame: { type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded' }, sessionId: session.id }],
      handoffTo(session),
    );
    expect(result.r.outcomes[0]).toMatchObject({ ok: true, kind: 'result', handedOff: true });
    expect(result.r.handoffs).toHaveLength(1);
    for (const d of result.r.handoffs) handoffTo(session).deliver(d);
    const b = await w.next('task.assign');
    expect(BigInt(b.concurrency_token)).toBe(BigInt(a.concurrency_token) + 1n);
    expect({ transactions: result.transactions, roundTrips: result.roundTrips, statements: result.statements.length }).toEqual({
      transactions: 1,
      roundTrips: 3,
      statements: 17,
    });
    // Each statement once: the credential check with the clock, the results' locking read, the
    // attempt and task closed, the successor's locking read, the key row's lock, the swap, the new
    // attempt, its task, its waiting row, the next waiting row of its group flagged (migration
    // 000009, queued: no round trip), the queue, the application, the stream head, the event.
    expect(result.statements.filter((s) => s.startsWith('SELECT'))).toHaveLength(4);
    expect(result.statements.filter((s) => s === 'COMMIT')).toHaveLength(1);

    const start = await counted([{ kind: 'start', who, attemptId: b.attempt_id, queueId }]);
    expect(start.r.outcomes[0]).toMatchObject({ ok: true, kind: 'start' });
    expect({ transactions: start.transactions, roundTrips: start.roundTrips, statements: start.statements.length }).toEqual({
      transactions: 1,
      roundTrips: 1,
      statements: 4,
    });
    expect(await keyRow(f.db.pool, f.tenant.namespace_id, 'K')).toMatchObject({ holder_attempt_id: b.attempt_id, highest_token: String(b.concurrency_token) });
  });
});

describe("the key holder's retry with a hand-off", () => {
  it("1 transaction of 3 round trips; the retry's waiting row inserted after the key row is locked and swapped", async () => {
    // A host of its own: the test above stopped the shared host's dispatcher.
    const host = new InProcessHost(f.db.pool);
    hosts.push(host);
    const { w, session, who, a, queueId } = await twoOnKey(host, await host.listen(), 'R');
    expect((await counted([{ kind: 'start', who, attemptId: a.attempt_id, queueId }])).r.outcomes[0]).toMatchObject({ ok: true });
    const frame = {
      type: 'result' as const,
      attempt_id: a.attempt_id,
      outcome: 'retry' as const,
      retry_after_ms: 3_600_000,
      error: { code: 'E', message: 'again' },
    };
    const result = await counted([{ kind: 'result', who, frame, sessionId: session.id }], handoffTo(session));
    expect(result.r.outcomes[0]).toMatchObject({ ok: true, kind: 'result', handedOff: true });
    for (const d of result.r.handoffs) handoffTo(session).deliver(d);
    expect((await w.next('task.assign')).task.id).not.toBe(a.task.id);
    // Lock order tasks → keys → waiting rows: the retry's INSERT comes after the key row's lock and
    // swap (before session 30 it came before them, and a cancel of the key's next row deadlocked
    // with it: test/waiting-heads.test.ts). The same 16 statements in 3 round trips as on main
    // before (889401a, measured with this test: only the INSERT's place differs, and there this
    // test fails on the order).
    const at = (prefix: string) => result.statements.findIndex((x) => x.startsWith(prefix));
    expect(at('UPDATE resource_keys')).toBeGreaterThan(at('SELECT concurrency_key,'));
    expect(result.statements.lastIndexOf('INSERT INTO waiting_tasks')).toBeGreaterThan(at('UPDATE resource_keys'));
    expect({ transactions: result.transactions, roundTrips: result.roundTrips, statements: result.statements.length }).toEqual({
      transactions: 1,
      roundTrips: 3,
      statements: 16,
    });
  });
});
