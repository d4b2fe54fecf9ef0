// Shared helpers for the dispatch suites (test/dispatch-*.test.ts): one database, one real gateway
// process, one tenant per file (useGatewayFixture, test/support/fixture.ts); per-test queues created
// over HTTP with short leases; raw workers; SQL readers and backdating helpers (the tests move
// database time instead of sleeping).
import { afterEach, expect } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import type { Queue, Task } from '@orbit/protocol/http-views';
import type { CredentialsFile } from '../../server/admin/bootstrap.js';
import { useGatewayFixture, type GatewayFixture } from './fixture.js';
import { assertPermitInvariants } from './invariants.js';
import { call, ikey } from './http.js';
import { hello, openRaw, type RawWorker } from './raw-worker.js';
import { submitTask } from './submit.js';
import { waitFor } from './wait.js';
import { setTaskTime } from './waiting.js';
import type { StartOkFrame } from '@orbit/protocol/frames';
import type { Attempt } from '@orbit/protocol/http-views';

/** The file's database, gateway, tenant and raw workers: useGatewayFixture() (test/support/fixture.ts). */
export type Fixture = GatewayFixture;

/** The dispatch suites' per-file set-up: useGatewayFixture, and after each test the test's raw
 * workers closed and the permit invariants asserted. */
export function useDispatchFixture(): Fixture {
  const f = useGatewayFixture();
  afterEach(async () => {
    closeWorkers(f);
    await assertPermitInvariants(f.db.pool);
  });
  return f;
}

/** Closes the workers opened by the last test. */
export function closeWorkers(f: Fixture): void {
  for (const w of f.workers.splice(0)) w.close();
}

let qn = 0;
/** The tests' one way to create a queue: POST /v1/queues as `tenant` (default the file's), a fresh
 * name and a 5 s lease unless `over` says otherwise; fails unless 201. */
export async function createQueue(f: Fixture, over: Record<string, unknown> = {}, tenant: CredentialsFile = f.t): Promise<Queue> {
  qn++;
  const r = await call(f.gw.url, 'POST', '/v1/queues', {
    token: tenant.token,
    key: ikey('q'),
    body: { name: `q-${process.pid}-${qn}`, lease_seconds: 5, ...over },
  });
  if (r.status !== 201) throw new Error(`create queue: ${r.status} ${r.text}`);
  return r.body.data.queue;
}

/** submitTask (support/submit.ts) on `queueId` of the file's gateway. */
export function submit(f: Fixture, queueId: string, over: Record<string, unknown> = {}, tenant: CredentialsFile = f.t): Promise<Task> {
  return submitTask(f.gw.url, tenant, { queue_id: queueId, ...over }, ikey('t'));
}

/** Opens a raw worker, says hello, returns it with the hello.ok frame. */
export async function connect(
  f: Fixture,
  queueIds: string[],
  over: Record<string, unknown> = {},
  tenant: CredentialsFile = f.t,
): Promise<{ w: RawWorker; ok: any; workerId: string }> {
  const w = await openRaw(f.gw.url, tenant.token);
  f.workers.push(w);
  const h = hello(queueIds, over);
  w.send(h);
  const ok = await w.next('hello.ok');
  return { w, ok, workerId: h.worker_id };
}

/** What leasedTask sets up: its queue, worker, task and the assignment. */
export interface Leased {
  q: Queue;
  w: RawWorker;
  workerId: string;
  task: Task;
  assign: any;
  attemptId: string;
}

/** Overrides of the queue body, the task body and the hello frame for leasedTask/runningTask. */
export interface LeasedOptions {
  queue?: Record<string, unknown>;
  task?: Record<string, unknown>;
  hello?: Record<string, unknown>;
}

/** A queue, a worker on it, one task assigned to it (asserted): returns everything. */
export async function leasedTask(f: Fixture, opts: LeasedOptions = {}): Promise<Leased> {
  const q = await createQueue(f, opts.queue);
  const { w, workerId } = await connect(f, [q.id], opts.hello);
  const task = await submit(f, q.id, opts.task);
  const assign = await w.next('task.assign');
  expect(assign.task.id).toBe(task.id);
  return { q, w, workerId, task, assign, attemptId: assign.attempt_id as string };
}

/** leasedTask, then started (start.ok). */
export async function runningTask(f: Fixture, opts: LeasedOptions = {}): Promise<Leased> {
  const x = await leasedTask(f, opts);
  await start(x.w, x.attemptId);
  return x;
}

export async function apiTask(f: Fixture, id: string, tenant: CredentialsFile = f.t): Promise<Task> {
  const r = await call(f.gw.url, 'GET', `/v1/tasks/${id}`, { token: tenant.token });
  expect(r.status).toBe(200);
  return r.body.data.task;
}

export async function apiAttempts(f: Fixture, taskId: string): Promise<Attempt[]> {
  const r = await call(f.gw.url, 'GET', `/v1/tasks/${taskId}/attempts`, { token: f.t.token });
  expect(r.status).toBe(200);
  return r.body.data.attempts;
}

export async function apiAttempt(f: Fixture, id: string): Promise<Attempt> {
  const r = await call(f.gw.url, 'GET', `/v1/attempts/${id}`, { token: f.t.token });
  expect(r.status).toBe(200);
  return r.body.data.attempt;
}

export async function sqlTask(f: Fixture, id: string): Promise<RowDataPacket> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>(
    `SELECT *, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), not_before) / 1000 AS not_before_in_ms FROM tasks WHERE id = ?`,
    [id],
  );
  return rows[0]!;
}

export async function sqlAttempt(f: Fixture, id: string): Promise<RowDataPacket> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT * FROM attempts WHERE id = ?', [id]);
  return rows[0]!;
}

export async function sqlAttempts(f: Fixture, taskId: string): Promise<RowDataPacket[]> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT * FROM attempts WHERE task_id = ? ORDER BY attempt_no', [taskId]);
  return rows;
}

/** Result events of one task, in sequence order (sequence as bigint). */
export async function sqlEvents(f: Fixture, taskId: string): Promise<{ sequence: bigint; type: string; result: any }[]> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT sequence, type, result FROM result_events WHERE task_id = ? ORDER BY sequence', [taskId]);
  return rows.map((r) => ({ sequence: BigInt(r.sequence as string), type: r.type as string, result: r.result ? JSON.parse(r.result as string) : null }));
}

/** Asserts the task's result events are exactly `types`, in strictly increasing sequence. */
export async function expectEvents(f: Fixture, taskId: string, types: string[]): Promise<void> {
  const ev = await sqlEvents(f, taskId);
  expect(ev.map((e) => e.type)).toEqual(types);
  for (let i = 1; i < ev.length; i++) expect(ev[i]!.sequence > ev[i - 1]!.sequence).toBe(true);
}

/** Moves an attempt's lease into the past (the sweeper's next tick sees it expired). */
export async function expireLease(f: Fixture, attemptId: string): Promise<void> {
  await f.db.pool.query('UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE id = ?', [attemptId]);
}

export async function expireDeadline(f: Fixture, taskId: string): Promise<void> {
  await setTaskTime(f.db.pool, taskId, 'deadline_at', 'UTC_TIMESTAMP(3) - INTERVAL 1 SECOND');
}

export async function makeDue(f: Fixture, taskId: string): Promise<void> {
  await setTaskTime(f.db.pool, taskId, 'not_before', 'UTC_TIMESTAMP(3) - INTERVAL 1 SECOND');
}

export async function waitTaskState(f: Fixture, id: string, state: string, ms = 5000): Promise<RowDataPacket> {
  return waitFor(
    `task ${id} ${state}`,
    async () => {
      const r = await sqlTask(f, id);
      return r.state === state ? r : null;
    },
    ms,
  );
}

/** Asserts that no frame of `type` arrives within `ms`. */
export async function expectNoFrame(w: RawWorker, type: string, ms = 700): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
  expect(w.frames.filter((fr) => fr.type === type)).toEqual([]);
}

export async function start(w: RawWorker, attemptId: string): Promise<StartOkFrame> {
  w.send({ type: 'start', attempt_id: attemptId });
  return w.next('start.ok');
}

/** The next frame whose type is one of `types` (other frames are kept). */
export async function nextOf(w: RawWorker, types: string[], ms = 10_000): Promise<any> {
  const take = () => {
    const i = w.frames.findIndex((fr) => types.includes(fr.type));
    return i >= 0 ? w.frames.splice(i, 1)[0] : undefined;
  };
  return waitFor(`${types.join('|')}`, take, { timeout: ms, interval: 20 }).catch((err: Error) => {
    throw new Error(`no ${types.join('|')} within ${ms} ms; have ${JSON.stringify(w.frames).slice(0, 500)} (${err.message})`);
  });
}

/** Sends a result and returns the reply (result.ok or error). */
export async function result(w: RawWorker, attemptId: string, outcome: string, extra: Record<string, unknown> = {}): Promise<any> {
  w.send({ type: 'result', attempt_id: attemptId, outcome, ...extra });
  return nextOf(w, ['result.ok', 'error']);
}

/** Changes the session's intake and waits until the gateway has processed it (frames of one
 * session are handled in order; the renew reply proves the capacity frame was applied). */
export async function setCapacity(w: RawWorker, capacity: number): Promise<void> {
  w.send({ type: 'capacity', capacity });
  w.send({ type: 'renew', attempt_ids: ['0'.repeat(32)] });
  await w.next('renew.ok');
}

export async function cmd(f: Fixture, taskId: string, verb: 'cancel' | 'resolve', body: Record<string, unknown>, key = ikey(verb)) {
  return call(f.gw.url, 'POST', `/v1/tasks/${taskId}:${verb}`, { token: f.t.token, key, body });
}

export function ms(iso: string | null): number {
  return Date.parse(iso!);
}

/** DATETIME(3) string → epoch ms. */
export function dbMs(v: string): number {
  return Date.parse(v.replace(' ', 'T') + 'Z');
}
