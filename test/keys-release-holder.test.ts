// The key release of the ledger's key phase (db/ledger-sql.ts releaseKeys) frees a key only where
// the releasing attempt still holds it. Every path that reaches it checks the attempt's state first
// (a late result is LEASE_LOST, a cancel finds the task moved on), so no test through the gateway
// reaches the statement with a stale attempt: here it is sent directly, against the real keys of a
// real gateway's attempts, beside a release by the current holder in the same statement (so a
// statement that released nothing would fail too).
import { describe, expect, it } from 'vitest';
import { releaseKeys } from '../server/db/ledger-sql.js';
import { withTransaction } from '../server/db/pool.js';
import { connect, createQueue, result, start, submit, useDispatchFixture } from './support/dispatch-fixture.js';
import { keyRow } from './support/keys-helpers.js';

const f = useDispatchFixture();

describe('a key release by an attempt that no longer holds the key', () => {
  it('leaves the key with its holder (holder, token and version unchanged) and frees the key its holder releases', async () => {
    const q = await createQueue(f);
    const { w } = await connect(f, [q.id], { capacity: 2, concurrency_keys: true });
    // The stale attempt: it held `held` and finished; the key's next task now holds it.
    await submit(f, q.id, { concurrency_key: 'held' });
    const first = await w.next('task.assign');
    await start(w, first.attempt_id);
    expect((await result(w, first.attempt_id, 'succeeded')).type).toBe('result.ok');
    await submit(f, q.id, { concurrency_key: 'held' });
    const holder = await w.next('task.assign');
    expect(BigInt(holder.concurrency_token)).toBe(BigInt(first.concurrency_token) + 1n);
    // A second key whose holder releases it in the same statement.
    await submit(f, q.id, { concurrency_key: 'freed' });
    const other = await w.next('task.assign');

    const ns = f.t.namespace_id;
    const before = await keyRow(f.db.pool, ns, 'held');
    expect(before).toMatchObject({ holder_attempt_id: holder.attempt_id, highest_token: String(holder.concurrency_token) });
    await withTransaction(f.db.pool, (c) =>
      releaseKeys(c, ns, [
        { key: Buffer.from('held'), attemptId: first.attempt_id },
        { key: Buffer.from('freed'), attemptId: other.attempt_id },
      ]),
    );
    expect(await keyRow(f.db.pool, ns, 'held')).toEqual(before);
    expect((await keyRow(f.db.pool, ns, 'freed'))?.holder_attempt_id).toBeNull();

    // Both attempts finish over the socket; the permit invariants (checked after the test) hold.
    for (const a of [holder, other]) {
      await start(w, a.attempt_id);
      expect((await result(w, a.attempt_id, 'succeeded')).type).toBe('result.ok');
    }
    expect((await keyRow(f.db.pool, ns, 'held'))?.holder_attempt_id).toBeNull();
  });
});
