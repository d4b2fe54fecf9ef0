// Session against a small in-process host (test/support/session-host.ts): the real Session,
// Dispatcher, frame committer and submitter on a real database and real sockets, without a gateway
// process or an AppContext — what SessionHost makes possible. Covers the session's state
// transitions, terminate() (the one way to end a session from outside), and that a session that
// ended gets no work: no claim, and attempts claimed for it before it ended go back at once.
import { advanceRunsInTx } from '../server/workflows/apply.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import type { Credential } from '../server/db/credentials.js';
import { findCredentialByTokenHash } from '../server/db/credentials.js';
import { hashToken } from '../server/admin/access.js';
import { claimRound } from '../server/dispatch/claim.js';
import { runFrameBatch } from '../server/dispatch/frame-committer.js';
import type { Session } from '../server/gateway/session.js';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { assertNoOpenRawSockets, hello, openRaw, type RawWorker } from './support/raw-worker.js';
import { InProcessHost } from './support/session-host.js';
import { waitForValue } from './support/wait.js';

let db: TestDb;
let t: CredentialsFile;
let cred: Credential;
let host: InProcessHost;
let url: string;
const workers: RawWorker[] = [];
const QUEUES = ['flow', 'terminate', 'no-work', 'undelivered', 'drain', 'peer-close', 'hello-timer', 'reuse', 'dup-start'];

beforeAll(async () => {
  db = await createTestDb();
  t = await newTenant(db, { queues: QUEUES });
  cred = (await findCredentialByTokenHash(db.pool, hashToken(t.token)))!;
  host = new InProcessHost(db.pool);
  url = await host.listen();
});

afterEach(() => {
  for (const w of workers.splice(0)) w.close();
});

afterAll(async () => {
  await host?.close();
  await assertNoOpenRawSockets();
  await db?.drop();
});

/** Opens a socket to `h` and returns it with the server-side Session (before any frame). */
async function open(h: InProcessHost, hostUrl: string): Promise<{ w: RawWorker; s: Session }> {
  const created = h.nextSession();
  const w = await openRaw(hostUrl, t.token);
  workers.push(w);
  return { w, s: await created };
}

/** Opens a session and says hello on `queue`; resolves after hello.ok. */
async function connect(queue: string, over: Record<string, unknown> = {}, h = host, hostUrl = url): Promise<{ w: RawWorker; s: Session; ok: any }> {
  const { w, s } = await open(h, hostUrl);
  w.send(hello([t.queues[queue]!], over));
  const ok = await w.next('hello.ok');
  return { w, s, ok };
}

async function sessionRow(id: string): Promise<RowDataPacket | undefined> {
  const [rows] = await db.pool.query<RowDataPacket[]>('SELECT state, close_code FROM worker_sessions WHERE id = ?', [id]);
  return rows[0];
}

async function taskState(id: string): Promise<string> {
  const [rows] = await db.pool.query<RowDataPacket[]>('SELECT state FROM tasks WHERE id = ?', [id]);
  return rows[0]!.state as string;
}

async function submit(queue: string, key: string): Promise<string> {
  const out = await host.submit(cred, t.queues[queue]!, key);
  if (!out.ok) throw out.error;
  return out.data.task.id;
}

/** Several dispatcher polls (at most 250 ms apart when idle) and a claim round's commit. */
const DISPATCHER_ROUNDS_MS = 800;

describe('Session on an in-process host', () => {
  it('hello → open: registered with the host, hello.ok sent, session row OPEN', async () => {
    const { w, s } = await open(host, url);
    expect(s.state).toBe('hello');
    expect(host.sessions.has(s.id)).toBe(false);
    w.send(hello([t.queues.flow!], { capacity: 2 }));
    const ok = await w.next('hello.ok');
    expect(ok.session_id).toBe(s.id);
    expect(s.state).toBe('open');
    expect(host.sessions.get(s.id)).toBe(s);
    // hello kicks a claim round, which holds the free slots while it runs.
    await host.dispatcher.idle();
    expect(s.slots.free).toBe(2);
    expect((await sessionRow(s.id))?.state).toBe('OPEN');
  });

  it('a submit wakes the session through the signals; start and result are answered after commit and free the slot', async () => {
    const { w, s } = await connect('flow', { capacity: 2 });
    const q = t.queues.flow!;
    const taskId = await submit('flow', 'flow-1');
    const a = await w.next('task.assign');
    expect(a.task.id).toBe(taskId);
    expect(host.woken).toContain(q);
    expect(s.slots.held.get(a.attempt_id)).toBe(q);
    await host.dispatcher.idle();
    expect(s.slots.free).toBe(1);
    w.send({ type: 'start', attempt_id: a.attempt_id });
    await w.next('start.ok');
    const before = host.woken.length;
    w.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded', output: { done: true } });
    const r = await w.next('result.ok');
    expect(r).toMatchObject({ attempt_id: a.attempt_id, task_state: 'SUCCEEDED', deduplicated: false });
    expect(s.slots.held.size).toBe(0);
    await host.dispatcher.idle();
    expect(s.slots.free).toBe(2);
    // The released permit woke the queue through the same signals as the submit.
    expect(host.woken.slice(before)).toContain(q);
    expect(await taskState(taskId)).toBe('SUCCEEDED');
  });

  it("two identities starting one attempt in the same frame batch: only the owner's start applies", async () => {
    const { w, s } = await connect('dup-start', { capacity: 1 });
    await submit('dup-start', 'dup-start-1');
    const a = await w.next('task.assign');
    const who = (workerId: string) => ({ namespaceId: t.namespace_id, workerId, credentialId: cred.id });
    const r = await runFrameBatch(db.pool, advanceRunsInTx, [
      { kind: 'start', who: who(s.workerId), attemptId: a.attempt_id, queueId: null },
      { kind: 'start', who: who('intruder-worker'), attemptId: a.attempt_id, queueId: null },
      { kind: 'start', who: who(s.workerId), attemptId: a.attempt_id, queueId: null },
    ]);
    expect(r.outcomes[0]).toMatchObject({ ok: true, kind: 'start' });
    expect(r.outcomes[1]).toMatchObject({ ok: false, error: { code: 'LEASE_LOST' } });
    expect(r.outcomes[2]).toMatchObject({ ok: true, kind: 'start' });
    const [rows] = await db.pool.query<RowDataPacket[]>('SELECT state, worker_id FROM attempts WHERE id = ?', [a.attempt_id]);
    expect(rows[0]).toMatchObject({ state: 'RUNNING', worker_id: s.workerId });
  });

  it('terminate(): fatal error frame, then the close; closed and unregistered at once; a second call does nothing', async () => {
    const { w, s } = await connect('terminate');
    s.terminate(4409, 'superseded in a unit test', 'STATE_CONFLICT');
    expect(s.state).toBe('closed');
    expect(host.sessions.has(s.id)).toBe(false);
    expect(s.slots.free).toBe(0);
    s.terminate(1011, 'a second end', 'INTERNAL');
    const err = await w.next('error');
    expect(err).toEqual({ type: 'error', code: 'STATE_CONFLICT', message: 'superseded in a unit test', fatal: true });
    const closed = await w.closed;
    expect(closed.code).toBe(4409);
    expect(w.frames.filter((f) => f.type === 'error')).toEqual([]);
    // The socket's close records the code on the session row.
    const row = await waitForValue(
      () => sessionRow(s.id),
      (r) => r?.state === 'CLOSED',
    );
    expect(row).toMatchObject({ state: 'CLOSED', close_code: 4409 });
  });

  it('terminate() without an error code closes with the code and reason only', async () => {
    const { w, s } = await connect('terminate');
    s.terminate(4000, 'plain close');
    expect(await w.closed).toEqual({ code: 4000, reason: 'plain close' });
    expect(w.frames).toEqual([]);
    expect(s.state).toBe('closed');
  });

  it('a terminated session gets no work: a task submitted after stays WAITING, and the next session takes it', async () => {
    const { w, s } = await connect('no-work', { capacity: 4 });
    // The round the hello kicked off must be over first: a round in flight when the session ends
    // may still read the task submitted below and claim it for the ended session (it is then
    // released at once — the next test — but this one asserts no attempt at all).
    await host.dispatcher.idle();
    s.terminate(4000, 'ended by the test');
    await w.closed;
    const taskId = await submit('no-work', 'no-work-1');
    host.kick(s);
    await new Promise((r) => setTimeout(r, DISPATCHER_ROUNDS_MS));
    expect(await taskState(taskId)).toBe('WAITING');
    const [attempts] = await db.pool.query<RowDataPacket[]>('SELECT id FROM attempts WHERE task_id = ?', [taskId]);
    expect(attempts).toEqual([]);
    expect(w.frames.filter((f) => f.type === 'task.assign')).toEqual([]);
    // The task was claimable all along: a live session gets it.
    const b = await connect('no-work');
    const a = await b.w.next('task.assign');
    expect(a.task.id).toBe(taskId);
    expect(b.s.slots.held.has(a.attempt_id)).toBe(true);
  });

  it('attempts claimed for a session that ended before delivery go back to WAITING at once; nothing reaches its socket', async () => {
    // A host whose dispatcher is stopped: this test runs the claim round itself, so the round
    // commits while the session is open and is delivered after it ended.
    const quiet = new InProcessHost(db.pool);
    quiet.dispatcher.stop();
    const quietUrl = await quiet.listen();
    try {
      const { w, s } = await connect('undelivered', { capacity: 2 }, quiet, quietUrl);
      const taskId = await submit('undelivered', 'undelivered-1');
      const round = await claimRound(db.pool, [{ session: s.claim, free: s.slots.free }], quiet.log, () => {});
      const got = round.bySession.get(s.id) ?? [];
      expect(got.map((a) => a.task.id)).toEqual([taskId]);
      expect(await taskState(taskId)).toBe('LEASED');
      s.terminate(4000, 'ended before delivery');
      s.deliver(got);
      await quiet.settle();
      expect(s.slots.held.size).toBe(0);
      expect(await taskState(taskId)).toBe('WAITING');
      const [rows] = await db.pool.query<RowDataPacket[]>('SELECT state FROM attempts WHERE id = ?', [got[0]!.attemptId]);
      // Released like an undelivered claim (docs/guarantees.md: EXPIRED, "released at reconnect").
      expect(rows[0]!.state).toBe('EXPIRED');
      await w.closed;
      expect(w.frames.filter((f) => f.type === 'task.assign')).toEqual([]);
    } finally {
      await quiet.close();
    }
  });

  it('open → draining → closed: a draining session gets no new work, its held attempt still finishes', async () => {
    const { w, s } = await connect('drain', { capacity: 2 });
    const first = await submit('drain', 'drain-1');
    const a = await w.next('task.assign');
    expect(a.task.id).toBe(first);
    w.send({ type: 'drain' });
    await w.next('drain.ok');
    expect(s.state).toBe('draining');
    expect(s.slots.free).toBe(0);
    expect(host.sessions.has(s.id)).toBe(true);
    const second = await submit('drain', 'drain-2');
    await new Promise((r) => setTimeout(r, DISPATCHER_ROUNDS_MS));
    expect(await taskState(second)).toBe('WAITING');
    w.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded' });
    expect((await w.next('result.ok')).task_state).toBe('SUCCEEDED');
    expect(w.frames.filter((f) => f.type === 'task.assign')).toEqual([]);
    s.terminate(1000, 'drained');
    expect(s.state).toBe('closed');
    expect((await w.closed).code).toBe(1000);
  });

  it("the peer's close ends the session the same way: closed, unregistered, row CLOSED with the peer's code", async () => {
    const { w, s } = await connect('peer-close');
    w.ws.close(4001, 'worker leaving');
    await w.closed;
    await waitForValue(
      () => s.state,
      (v) => v === 'closed',
    );
    expect(s.state).toBe('closed');
    expect(host.sessions.has(s.id)).toBe(false);
    const row = await waitForValue(
      () => sessionRow(s.id),
      (r) => r?.state === 'CLOSED',
    );
    expect(row).toMatchObject({ state: 'CLOSED', close_code: 4001 });
  });

  it("no hello within the host's hello time: PROTOCOL_ERROR, 1002, never registered", async () => {
    const saved = host.config.helloTimeoutMs;
    host.config.helloTimeoutMs = 150;
    try {
      const { w, s } = await open(host, url);
      const err = await w.next('error');
      expect(err).toMatchObject({ code: 'PROTOCOL_ERROR', fatal: true });
      expect((await w.closed).code).toBe(1002);
      expect(s.state).toBe('closed');
      expect(host.sessions.has(s.id)).toBe(false);
      expect(await sessionRow(s.id)).toBeUndefined();
    } finally {
      host.config.helloTimeoutMs = saved;
    }
  });

  it('state is read-only outside the Session class', async () => {
    const { s } = await connect('flow');
    expect(() => {
      // @ts-expect-error the state has a getter only: terminate() is the way to end a session
      s.state = 'closed';
    }).toThrow(TypeError);
    expect(s.state).toBe('open');
  });
});
