// One claim round per application at a time (gateway/dispatcher.ts): work woken while an
// application's round is in flight folds into its next round, never a second round beside it, which
// is what lets session slots go without reservations (session-slots.ts). The first round is held
// before its COMMIT text by a named lock this test holds (a statement injected by the pool's tap,
// bench/pool-tap.ts); another application's round, assigned meanwhile, shows the dispatcher ran
// after the second wake, so "no second round" is shown without timing.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { findCredentialByTokenHash, type Credential } from '../server/db/credentials.js';
import { hashToken } from '../server/admin/access.js';
import { PoolTap } from '../bench/pool-tap.js';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { assertNoOpenRawSockets, hello, openRaw, type RawWorker } from './support/raw-worker.js';
import { InProcessHost } from './support/session-host.js';
import { waitFor } from './support/wait.js';

const LOCK = 'orbit-test-held-round';
let db: TestDb;
let host: InProcessHost;
let url: string;
let holder: PoolConnection | null = null;
const workers: RawWorker[] = [];
/** On the file's pool: holds the first round before its COMMIT text. */
const tap = new PoolTap();

beforeAll(async () => {
  db = await createTestDb();
  tap.attach(db.pool);
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

async function tenant(): Promise<{ t: CredentialsFile; cred: Credential }> {
  const t = await newTenant(db, { queues: ['work'] });
  return { t, cred: (await findCredentialByTokenHash(db.pool, hashToken(t.token)))! };
}

async function connect(t: CredentialsFile) {
  const created = host.nextSession();
  const w = await openRaw(url, t.token);
  workers.push(w);
  const s = await created;
  w.send(hello([t.queues.work!], { capacity: 4 }));
  await w.next('hello.ok');
  return { w, s };
}

async function submit(x: { t: CredentialsFile; cred: Credential }, key: string): Promise<string> {
  const out = await host.submit(x.cred, x.t.queues.work!, key);
  if (!out.ok) throw out.error;
  return out.data.task.id;
}

async function taskState(id: string): Promise<string> {
  const [rows] = await db.pool.query<RowDataPacket[]>('SELECT state FROM tasks WHERE id = ?', [id]);
  return rows[0]!.state as string;
}

describe('claim rounds of one application', () => {
  it('work woken while its round is in flight waits for that round, then gets the next; slots and attempts stay exact', async () => {
    const a = await tenant();
    const b = await tenant();
    const wa = await connect(a.t);
    const wb = await connect(b.t);
    await host.dispatcher.idle();

    // The next round's permit update (the first statement of its COMMIT text) waits for LOCK.
    holder = await db.pool.getConnection();
    await holder.query('DO GET_LOCK(?, 60)', [LOCK]);
    let held = 0;
    tap.setHook((sql) => (/^\s*UPDATE queues SET active_attempts/.test(sql) && held++ === 0 ? `DO GET_LOCK('${LOCK}', 60)` : null));

    const first = await submit(a, 'first');
    await waitFor('the first round to reach its COMMIT text', () => held === 1);
    const second = await submit(a, 'second');
    // Another application's round runs beside the held one, after the second wake.
    const other = await submit(b, 'other');
    expect((await wb.w.next('task.assign')).task.id).toBe(other);
    // No second round of application a: its second task is still WAITING, and nothing was delivered.
    expect(await taskState(second)).toBe('WAITING');
    expect(wa.s.slots.held.size).toBe(0);

    await holder.query('DO RELEASE_LOCK(?)', [LOCK]);
    expect((await wa.w.next('task.assign')).task.id).toBe(first);
    expect((await wa.w.next('task.assign')).task.id).toBe(second);
    await host.dispatcher.idle();
    expect(wa.s.slots.held.size).toBe(2);
    expect(wa.s.slots.free).toBe(2);
    const [attempts] = await db.pool.query<RowDataPacket[]>('SELECT task_id FROM attempts WHERE task_id IN (?, ?)', [first, second]);
    expect(attempts.map((r) => r.task_id).sort()).toEqual([first, second].sort());
  });
});
