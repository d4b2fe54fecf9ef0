// Small helpers shared by the keys-*.test.ts files: raw sessions, key rows (tasks are submitted
// with support/submit.ts's submitTask).
import { afterAll, beforeAll, expect } from 'vitest';
import { freePort } from '../../server/mariadb/embedded-mariadb.js';
import { createTestDb, type TestDb } from './db.js';
import { endOfFileChecks } from './fixture.js';
import { startGateway, type GatewayProcess } from './gateway.js';
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../../server/db/pool.js';
import type { CredentialsFile } from '../../server/admin/bootstrap.js';
import { call, ikey } from './http.js';
import { hello, openRaw, type RawWorker } from './raw-worker.js';

/** A raw session after hello.ok. */
export async function session(url: string, t: CredentialsFile, over: Record<string, unknown> = {}): Promise<RawWorker & { ok: any; workerId: string }> {
  const w = await openRaw(url, t.token);
  const h = hello([t.queue_id], { concurrency_keys: true, ...over });
  w.send(h);
  const ok = await w.next('hello.ok');
  return Object.assign(w, { ok, workerId: h.worker_id as string });
}

export async function startAndFinish(w: RawWorker, attemptId: string, outcome = 'succeeded', extra: Record<string, unknown> = {}): Promise<any> {
  w.send({ type: 'start', attempt_id: attemptId });
  await w.next('start.ok');
  w.send({ type: 'result', attempt_id: attemptId, outcome, ...extra });
  return w.next('result.ok');
}

export interface KeyRow {
  highest_token: string;
  holder_attempt_id: string | null;
  version: string;
}

export async function keyRow(pool: Pool, namespaceId: string, key: string): Promise<KeyRow | null> {
  const [rows] = await pool.query<RowDataPacket[]>(
    'SELECT CAST(highest_token AS CHAR) AS highest_token, holder_attempt_id, CAST(version AS CHAR) AS version FROM resource_keys WHERE namespace_id = ? AND concurrency_key = ?',
    [namespaceId, Buffer.from(key, 'utf8')],
  );
  return (rows[0] as KeyRow | undefined) ?? null;
}

export async function liveOnKey(pool: Pool, namespaceId: string, key: string): Promise<number> {
  const [rows] = await pool.query<RowDataPacket[]>(
    "SELECT COUNT(*) AS n FROM attempts WHERE namespace_id = ? AND concurrency_key = ? AND state IN ('LEASED','RUNNING')",
    [namespaceId, Buffer.from(key, 'utf8')],
  );
  return Number(rows[0]!.n);
}

export async function taskState(pool: Pool, id: string): Promise<string> {
  const [rows] = await pool.query<RowDataPacket[]>('SELECT state FROM tasks WHERE id = ?', [id]);
  return rows[0]!.state as string;
}

/** Moves the lease of live attempts into the past so the sweeper (≥ 1/s) recovers them now. */
export async function backdateLeases(pool: Pool, attemptIds: string[]): Promise<void> {
  if (!attemptIds.length) return;
  await pool.query(
    `UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE id IN (${attemptIds.map(() => '?').join(',')}) AND state IN ('LEASED','RUNNING')`,
    attemptIds,
  );
}

export async function metric(url: string, name: string): Promise<number> {
  const r = await call(url, 'GET', '/metrics');
  let sum = 0;
  for (const line of r.text.split('\n')) {
    if (line.startsWith(name + ' ') || line.startsWith(name + '{')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** Frames of a type received so far (kept in the raw worker's buffer). */
export function drainFrames(w: RawWorker, type: string): any[] {
  const out: any[] = [];
  for (let i = w.frames.length - 1; i >= 0; i--) if (w.frames[i].type === type) out.unshift(w.frames.splice(i, 1)[0]);
  return out;
}

/** Pauses or resumes the tenant's queue over HTTP at its current revision (expects 200). */
export async function setQueuePausedOverHttp(url: string, t: CredentialsFile, paused: boolean): Promise<void> {
  const q = (await call(url, 'GET', `/v1/queues/${t.queue_id}`, { token: t.token })).body.data.queue;
  const r = await call(url, 'POST', `/v1/queues/${t.queue_id}:${paused ? 'pause' : 'resume'}`, {
    token: t.token,
    key: ikey(),
    body: { expected_revision: q.revision },
  });
  expect(r.status, r.text).toBe(200);
}

/** Starts the attempt, pauses the tenant's queue over HTTP, then sends its result: the task is
 * SUCCEEDED and no task.assign follows (no claim grants from a paused queue), so `waitingTaskId`
 * is still WAITING. */
export async function finishWhileQueuePaused(
  url: string,
  t: CredentialsFile,
  w: RawWorker,
  attemptId: string,
  pool: Pool,
  waitingTaskId: string,
): Promise<void> {
  w.send({ type: 'start', attempt_id: attemptId });
  await w.next('start.ok');
  await setQueuePausedOverHttp(url, t, true);
  w.send({ type: 'result', attempt_id: attemptId, outcome: 'succeeded' });
  expect((await w.next('result.ok')).task_state).toBe('SUCCEEDED');
  await expect(w.next('task.assign', 800)).rejects.toThrow(/no task.assign/);
  expect(await taskState(pool, waitingTaskId)).toBe('WAITING');
}

/** The keys invariant suites' set-up: the file's database and a gateway on a fixed port, so a
 * restart (clean or kill -9) keeps the URL; end-of-file leak checks. Read db/gw when called. */
export function useRestartableGateway() {
  const s = {} as { db: TestDb; gw: GatewayProcess; port: number };
  beforeAll(async () => {
    s.db = await createTestDb();
    s.port = await freePort();
    s.gw = await startGateway(s.db.dsn, {}, s.port);
  });
  afterAll(async () => {
    await endOfFileChecks(s.db);
  });
  return {
    get db(): TestDb {
      return s.db;
    },
    get gw(): GatewayProcess {
      return s.gw;
    },
    url: (): string => s.gw.url,
    /** Stops the gateway (exit code 0 expected; kill -9 when `kill9`) and starts it on the same port. */
    async restart(kill9 = false): Promise<void> {
      if (kill9) await s.gw.kill9();
      else expect(await s.gw.stop()).toBe(0);
      s.gw = await startGateway(s.db.dsn, {}, s.port);
    },
  };
}
