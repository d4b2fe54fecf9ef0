// Claim rounds of one application (gateway/dispatcher.ts): a round has its application's turn
// until it has locked its candidates; work woken meanwhile folds into its next round. Then the next
// round may run beside its COMMIT when the first ran out of work for a session and grants no key,
// and fills only the slots the first did not take. A round is held at one of its statements by a
// named lock this test holds (a statement injected by the pool's tap, bench/pool-tap.ts); another
// application's round, assigned meanwhile, shows the dispatcher ran after the wake, so "no round"
// is shown without timing (two rounds run at most, so that other round runs after anything the
// wake started).
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
/** On the file's pool: holds the first round at one statement. */
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

async function connect(t: CredentialsFile, capacity = 4, keys = false) {
  const created = host.nextSession();
  const w = await openRaw(url, t.token);
  workers.push(w);
  const s = await created;
  w.send(hello([t.queues.work!], { capacity, concurrency_keys: keys }));
  await w.next('hello.ok');
  return { w, s };
}

async function submit(x: { t: CredentialsFile; cred: Credential }, key: string, concurrencyKey?: string): Promise<string> {
  const out = await host.submit(x.cred, x.t.queues.work!, key, concurrencyKey ? { concurrency_key: concurrencyKey } : {});
  if (!out.ok) throw out.error;
  return out.data.task.id;
}

async function taskState(id: string): Promise<string> {
  const [rows] = await db.pool.query<RowDataPacket[]>('SELECT state FROM tasks WHERE id = ?', [id]);
  return rows[0]!.state as string;
}

async function attemptsOf(...ids: string[]): Promise<string[]> {
  const [rows] = await db.pool.query<RowDataPacket[]>('SELECT task_id FROM attempts WHERE task_id IN (?)', [ids]);
  return rows.map((r) => r.task_id as string).sort();
}

/** The statements a test holds a round at. */
const CANDIDATE_READ = /SELECT w\.task_id AS id/;
/** The permit update, the first statement of the round's COMMIT text. */
const COMMIT_TEXT = /^\s*UPDATE queues SET active_attempts = IF/;

/** Two applications, a session of each (a's of `capacity`, with the key capability if `keys`); the
 * first round of a's queue that sends a statement matching `at` waits there for LOCK, holding
 * `first` (submitted with `concurrencyKey`, if any). The round's connection lets the lock go as
 * soon as it has it, so that no pooled connection keeps it for the next test; the poll's rounds of
 * other sessions pass. */
async function roundHeldAt(at: RegExp, o: { capacity?: number; keys?: boolean; concurrencyKey?: string } = {}) {
  const a = await tenant();
  const b = await tenant();
  const wa = await connect(a.t, o.capacity, o.keys);
  const wb = await connect(b.t);
  await host.dispatcher.idle();
  holder = await db.pool.getConnection();
  await holder.query('DO GET_LOCK(?, 60)', [LOCK]);
  const queueId = a.t.queues.work!;
  let held = 0;
  tap.setHook((sql) => (at.test(sql) && sql.includes(queueId) && held++ === 0 ? `DO GET_LOCK('${LOCK}', 60), RELEASE_LOCK('${LOCK}')` : null));
  const first = await submit(a, 'first', o.concurrencyKey);
  await waitFor('the first round to reach the held statement', () => held === 1);
  return { a, b, wa, wb, first };
}

async function release(): Promise<void> {
  await holder!.query('DO RELEASE_LOCK(?)', [LOCK]);
}

describe('claim rounds of one application', () => {
  it('work woken before a round has locked its candidates waits for that round: no second round reads beside it', async () => {
    const { a, b, wa, wb, first } = await roundHeldAt(CANDIDATE_READ);
    // A session of the application that the held round does not serve: its own slots are free.
    const wc = await connect(a.t);
    const second = await submit(a, 'second');
    const other = await submit(b, 'other');
    expect((await wb.w.next('task.assign')).task.id).toBe(other);
    expect(await taskState(first)).toBe('WAITING');
    expect(await taskState(second)).toBe('WAITING');
    expect(await attemptsOf(first, second)).toEqual([]);

    // The held read, sent after the second commit, sees both.
    await release();
    const got = [(await wa.w.next('task.assign')).task.id, (await wa.w.next('task.assign')).task.id];
    expect(got.sort()).toEqual([first, second].sort());
    await host.dispatcher.idle();
    expect(wa.s.slots.held.size).toBe(2);
    expect(wa.s.slots.free).toBe(2);
    expect(wc.s.slots.held.size).toBe(0);
    expect(await attemptsOf(first, second)).toEqual([first, second].sort());
  });

  it('a round that took all it asked for (a backlog) keeps the turn to its COMMIT: the next one waits and takes a full batch', async () => {
    const { a, b, wa, wb, first } = await roundHeldAt(COMMIT_TEXT, { capacity: 1 });
    // The held round filled its one slot: a session connecting now waits for the next round.
    const wc = await connect(a.t);
    const second = await submit(a, 'second');
    const other = await submit(b, 'other');
    expect((await wb.w.next('task.assign')).task.id).toBe(other);
    expect(await taskState(second)).toBe('WAITING');
    expect(wc.s.slots.held.size).toBe(0);

    await release();
    expect((await wa.w.next('task.assign')).task.id).toBe(first);
    expect((await wc.w.next('task.assign')).task.id).toBe(second);
    await host.dispatcher.idle();
    expect(await attemptsOf(first, second)).toEqual([first, second].sort());
  });

  it('a round that grants a key keeps the turn to its COMMIT, even with slots left', async () => {
    const { a, b, wa, wb, first } = await roundHeldAt(COMMIT_TEXT, { capacity: 2, keys: true, concurrencyKey: 'resource-1' });
    const second = await submit(a, 'second');
    const other = await submit(b, 'other');
    expect((await wb.w.next('task.assign')).task.id).toBe(other);
    expect(await taskState(second)).toBe('WAITING');
    expect(wa.s.slots.held.size).toBe(0);

    await release();
    expect((await wa.w.next('task.assign')).task.id).toBe(first);
    expect((await wa.w.next('task.assign')).task.id).toBe(second);
    await host.dispatcher.idle();
    expect(await attemptsOf(first, second)).toEqual([first, second].sort());
  });

  it('beside a round held at its COMMIT the next round runs, and fills only the slots the first did not take', async () => {
    const { a, b, wa, wb, first } = await roundHeldAt(COMMIT_TEXT, { capacity: 2 });
    // The held round has locked `first` and takes one of the two slots; the next round the other.
    const second = await submit(a, 'second');
    expect((await wa.w.next('task.assign')).task.id).toBe(second);
    // No slot is left that the held round does not take: the third stays WAITING, with no attempt.
    const third = await submit(a, 'third');
    const other = await submit(b, 'other');
    expect((await wb.w.next('task.assign')).task.id).toBe(other);
    expect(await taskState(third)).toBe('WAITING');
    expect(await attemptsOf(third)).toEqual([]);
    expect(wa.s.slots.held.size).toBe(1);

    await release();
    expect((await wa.w.next('task.assign')).task.id).toBe(first);
    await host.dispatcher.idle();
    expect(wa.s.slots.held.size).toBe(2);
    expect(wa.s.slots.free).toBe(0);
    expect(await attemptsOf(first, second, third)).toEqual([first, second].sort());
    expect(await taskState(third)).toBe('WAITING');
  });
});
