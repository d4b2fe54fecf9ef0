// A coalesced batch of start frames only is one round trip (server/dispatch/start-frames.ts,
// applyStartsAlone): START TRANSACTION, the credential check that reads the clock, the UPDATE that
// checks each start's credential itself and computes the lease from that clock, and COMMIT, as one
// text. On the real frame committer, sessions and database (test/support/session-host.ts): the
// round trips counted (transactionStats, what /metrics reports), the answered lease ends equal the
// rows', and every refusal is what it was before the fold — a revoked credential, another worker,
// an expired lease, an unknown attempt — in the same batch as starts that apply.
import { advanceRunsInTx } from '../server/workflows/apply.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { hashToken } from '../server/admin/access.js';
import { findCredentialByTokenHash, insertCredential, revokeCredential, type Credential } from '../server/db/credentials.js';
import { transactionStats } from '../server/db/pipeline.js';
import { toIso } from '../server/db/pool.js';
import { runFrameBatch } from '../server/dispatch/frame-committer.js';
import type { FrameCommand } from '../server/dispatch/frame-commands.js';
import { newId } from '../server/ids.js';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { assertPermitInvariants } from './support/invariants.js';
import { hello, openRaw, type RawWorker } from './support/raw-worker.js';
import { InProcessHost } from './support/session-host.js';

/** The file's database, tenant, the tenant's credential and the in-process host (beforeAll). */
let f: { db: TestDb; tenant: CredentialsFile; live: Credential; host: InProcessHost; url: string };
const sockets: RawWorker[] = [];

beforeAll(async () => {
  const db = await createTestDb();
  const tenant = await newTenant(db, { queues: ['starts', 'refusals'] });
  const host = new InProcessHost(db.pool);
  f = { db, tenant, live: (await findCredentialByTokenHash(db.pool, hashToken(tenant.token)))!, host, url: await host.listen() };
});
afterEach(async () => {
  for (const w of sockets.splice(0)) w.close();
  await assertPermitInvariants(f.db.pool);
});
afterAll(async () => {
  await f?.host.close();
  await f?.db.drop();
});

/** A session on `queue` at full capacity: `count` attempts assigned to it and not started. With
 * no free slot the dispatcher claims nothing for it, so the counters below see only the batch. */
async function fullSession(queue: string, count: number): Promise<{ workerId: string; attemptIds: string[] }> {
  const created = f.host.nextSession();
  const w = await openRaw(f.url, f.tenant.token);
  sockets.push(w);
  await created;
  const h = hello([f.tenant.queues[queue]!], { capacity: count });
  w.send(h);
  await w.next('hello.ok');
  for (let n = 0; n < count; n++) {
    const r = await f.host.submit(f.live, f.tenant.queues[queue]!, `${queue}-${n}`);
    if (!r.ok) throw r.error;
  }
  const attemptIds: string[] = [];
  while (attemptIds.length < count) attemptIds.push((await w.next('task.assign')).attempt_id as string);
  await f.host.dispatcher.idle();
  return { workerId: h.worker_id, attemptIds };
}

/** A start frame as a session sends it: with the attempt's queue, which the session holds. */
const start = (attemptId: string, workerId: string, credentialId = f.live.id, queueId: string | null = null): FrameCommand => ({
  kind: 'start',
  who: { namespaceId: f.tenant.namespace_id, workerId, credentialId },
  attemptId,
  queueId,
});

/** runFrameBatch and the transactions and round trips it cost. */
async function counted(cmds: FrameCommand[]) {
  const before = { ...transactionStats };
  const r = await runFrameBatch(f.db.pool, advanceRunsInTx, cmds);
  return { r, transactions: transactionStats.transactions - before.transactions, roundTrips: transactionStats.roundTrips - before.roundTrips };
}

async function attemptRows(ids: string[]): Promise<Map<string, RowDataPacket>> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>(
    `SELECT a.id, a.state, a.lease_expires_at, a.started_at, t.state AS t_state, t.attempts_made
       FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.id IN (?)`,
    [ids],
  );
  return new Map(rows.map((r) => [r.id as string, r]));
}

describe('a batch of starts only', () => {
  it('is one transaction of one round trip, and each answer is the lease end the row got', async () => {
    const {
      workerId,
      attemptIds: [first, ...attemptIds],
    } = await fullSession('starts', 4);
    const held = (id: string) => start(id, workerId, f.live.id, f.tenant.queues.starts!);
    // The first start reads the queue's configuration (cached for 5 s: db/queue-config.ts), as the
    // first start on a queue does on every node.
    expect((await counted([held(first!)])).r.outcomes[0]).toMatchObject({ ok: true });
    const { r, transactions, roundTrips } = await counted(attemptIds.map(held));
    expect({ transactions, roundTrips }).toEqual({ transactions: 1, roundTrips: 1 });
    const rows = await attemptRows(attemptIds);
    attemptIds.forEach((id, n) => {
      const row = rows.get(id)!;
      expect(row).toMatchObject({ state: 'RUNNING', t_state: 'RUNNING', attempts_made: 1 });
      expect(r.outcomes[n]).toEqual({ ok: true, kind: 'start', leaseExpiresAt: toIso(row.lease_expires_at) });
      // The lease was computed from the instant the statement also recorded as started_at.
      const leaseMs = Date.parse(toIso(row.lease_expires_at)!) - Date.parse(toIso(row.started_at)!);
      expect(leaseMs % 1000).toBe(0);
    });
    // Sent again: answered from the rows, nothing changed.
    const again = await counted(attemptIds.map(held));
    expect(again.r.outcomes.map((o) => o.ok)).toEqual([true, true, true]);
    expect((await attemptRows(attemptIds)).get(attemptIds[0]!)!.attempts_made).toBe(1);
  });

  it('refuses each start exactly as before: revoked credential, another worker, expired lease, unknown attempt', async () => {
    const { workerId, attemptIds } = await fullSession('refusals', 4);
    const [applies, byRevoked, byIntruder, expired] = attemptIds as [string, string, string, string];
    const revoked = newId();
    await insertCredential(f.db.pool, {
      id: revoked,
      namespaceId: f.tenant.namespace_id,
      name: 'revoked',
      tokenHash: hashToken(revoked),
      scopes: ['worker'],
      queueIds: '*',
    });
    expect(await revokeCredential(f.db.pool, revoked)).toBe(true);
    await f.db.pool.query('UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE id = ?', [expired]);
    const { r } = await counted([
      start(applies, workerId),
      start(byRevoked, workerId, revoked),
      start(byIntruder, 'intruder-worker'),
      start(expired, workerId),
      start(newId(), workerId),
      start('not-an-id', workerId, revoked),
      start('not-an-id', workerId),
    ]);
    expect(r.outcomes[0]).toMatchObject({ ok: true, kind: 'start' });
    expect(r.outcomes[1]).toMatchObject({ ok: false, error: { code: 'UNAUTHENTICATED' } });
    expect(r.outcomes[2]).toMatchObject({ ok: false, error: { code: 'LEASE_LOST', message: 'attempt belongs to another worker' } });
    expect(r.outcomes[3]).toMatchObject({ ok: false, error: { code: 'LEASE_LOST', message: 'attempt is past its lease' } });
    expect(r.outcomes[4]).toMatchObject({ ok: false, error: { code: 'NOT_FOUND' } });
    expect(r.outcomes[5]).toMatchObject({ ok: false, error: { code: 'UNAUTHENTICATED' } });
    expect(r.outcomes[6]).toMatchObject({ ok: false, error: { code: 'NOT_FOUND' } });
    const rows = await attemptRows(attemptIds);
    expect(attemptIds.map((id) => rows.get(id)!.state)).toEqual(['RUNNING', 'LEASED', 'LEASED', 'LEASED']);
    // The owner's start of the attempt the revoked credential named still applies.
    const { r: owner } = await counted([start(byRevoked, workerId, revoked), start(byRevoked, workerId)]);
    expect(owner.outcomes[0]).toMatchObject({ ok: false, error: { code: 'UNAUTHENTICATED' } });
    expect(owner.outcomes[1]).toMatchObject({ ok: true, kind: 'start' });
    expect((await attemptRows([byRevoked])).get(byRevoked)!.state).toBe('RUNNING');
  });
});
