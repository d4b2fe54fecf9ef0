// Two claim rounds of one application in flight at once (gateway/dispatcher.ts): work woken after
// a round read its candidates gets a round of its own next to that round, in the slots the first
// gave back after its read (SlotReservation.shrink), instead of waiting for the first's remaining
// round trips. The first round is held before its COMMIT text by a named lock this test holds
// (a statement injected by the pool's tap, bench/pool-tap.ts), so "next to" is shown without timing: the second
// task is assigned and committed while the first round has still committed nothing.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import type { Credential } from '../server/db/credentials.js';
import { findCredentialByTokenHash } from '../server/db/credentials.js';
import { hashToken } from '../server/admin/access.js';
import { PoolTap } from '../bench/pool-tap.js';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { assertNoOpenRawSockets, hello, openRaw, type RawWorker } from './support/raw-worker.js';
import { InProcessHost } from './support/session-host.js';
import { waitFor } from './support/wait.js';

const LOCK = 'orbit-test-held-round';
let db: TestDb;
let t: CredentialsFile;
let cred: Credential;
let host: InProcessHost;
let url: string;
let holder: PoolConnection | null = null;
const workers: RawWorker[] = [];
/** On the file's pool: holds the first round before its COMMIT text. */
const tap = new PoolTap();

beforeAll(async () => {
  db = await createTestDb();
  tap.attach(db.pool);
  t = await newTenant(db, { queues: ['overlap'] });
  cred = (await findCredentialByTokenHash(db.pool, hashToken(t.token)))!;
  host = new InProcessHost(db.pool);
  url = await host.listen();
});

afterEach(async () => {
  tap.setHook(null);
  if (holder) {
    await holder.query('DO RELEASE_LOCK(?)', [LOCK]);
    holder.release();
    holder = null;
  }
  for (const w of workers.splice(0)) w.close();
});

afterAll(async () => {
  await host?.close();
  await assertNoOpenRawSockets();
  await db?.drop();
});

async function taskState(id: string): Promise<string> {
  const [rows] = await db.pool.query<RowDataPacket[]>('SELECT state FROM tasks WHERE id = ?', [id]);
  return rows[0]!.state as string;
}

async function submit(key: string): Promise<string> {
  const out = await host.submit(cred, t.queues.overlap!, key);
  if (!out.ok) throw out.error;
  return out.data.task.id;
}

describe('claim rounds of one application', () => {
  it('work woken while a round that already read is held gets a second round, which commits first', async () => {
    const created = host.nextSession();
    const w = await openRaw(url, t.token);
    workers.push(w);
    const s = await created;
    w.send(hello([t.queues.overlap!], { capacity: 4 }));
    await w.next('hello.ok');
    await host.dispatcher.idle();

    // The next round's permit update (the first statement of its COMMIT text) waits for LOCK.
    holder = await db.pool.getConnection();
    await holder.query('DO GET_LOCK(?, 60)', [LOCK]);
    let held = 0;
    tap.setHook((sql) => (/^\s*UPDATE queues SET active_attempts/.test(sql) && held++ === 0 ? `DO GET_LOCK('${LOCK}', 60)` : null));

    const first = await submit('first');
    // The round of `first` built its COMMIT text: it has read, and holds one of the 4 slots.
    await waitFor('the first round to reach its COMMIT text', () => held === 1);
    expect(s.slots.free).toBe(3);

    const second = await submit('second');
    const a = await w.next('task.assign');
    expect(a.task.id).toBe(second);
    // The first round is still held: its task is WAITING to every other transaction.
    expect(held).toBe(2);
    expect(await taskState(first)).toBe('WAITING');
    expect(await taskState(second)).toBe('LEASED');

    await holder.query('DO RELEASE_LOCK(?)', [LOCK]);
    const b = await w.next('task.assign');
    expect(b.task.id).toBe(first);
    expect(await taskState(first)).toBe('LEASED');
    await host.dispatcher.idle();
    expect(s.slots.held.size).toBe(2);
    expect(s.slots.free).toBe(2);
    // One attempt per task: neither round granted the other's task.
    const [attempts] = await db.pool.query<RowDataPacket[]>('SELECT task_id FROM attempts WHERE task_id IN (?, ?)', [first, second]);
    expect(attempts.map((r) => r.task_id).sort()).toEqual([first, second].sort());
  });
});
