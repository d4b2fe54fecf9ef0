// Orbit against a server whose default sql_mode is hostile to it: a private
// MariaDB started with --sql-mode=NO_BACKSLASH_ESCAPES,ANSI_QUOTES, migrated, with a real gateway
// process and a raw worker. Every pooled connection runs under Orbit's own mode
// (db/session-setup.ts), also one opened after its predecessor was killed; payloads, keys,
// business keys, outputs and error codes/messages full of quotes, backslashes, NUL and multi-byte
// characters round-trip exactly (HTTP, task.assign, attempts, events); injection-shaped values
// change no table. One server start for the whole file.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import mysql, { type RowDataPacket } from 'mysql2/promise';
import { startEmbeddedMariaDb, ensureDatabase, type EmbeddedServer } from '../server/mariadb/embedded-mariadb.js';
import { createPool, parseDsn, type Pool } from '../server/db/pool.js';
import { ORBIT_SQL_MODE, SESSION_SETUP } from '../server/db/session-setup.js';
import { migrateUp } from '../server/mariadb/migrations.js';
import { bootstrap, type CredentialsFile } from '../server/admin/bootstrap.js';
import { startGateway, stopAllGateways, type GatewayProcess } from './support/gateway.js';
import { assertNoOpenRawSockets, hello, openRaw } from './support/raw-worker.js';
import { submitTask } from './support/submit.js';
import { call } from './support/http.js';
import { createSub, lease } from './support/events.js';
import { waitForValue } from './support/wait.js';
import { createFencedResource } from '@orbit/worker-sdk/fenced-resource';

const HOSTILE_MODE = 'NO_BACKSLASH_ESCAPES,ANSI_QUOTES';

/** Quotes, backslashes in every combination mysql2's escaping writes, injection shapes, NUL,
 * Ctrl-Z, line separators and multi-byte characters. */
const NASTY = [
  "it's",
  '"double" quoted',
  'back\\slash',
  "\\'",
  "\\\\'",
  '\\"',
  "''",
  '\\',
  '\\\\',
  "'); DELETE FROM tasks; --",
  "\\'); DELETE FROM tasks; -- ",
  "\\\\'); DROP TABLE queues; #",
  '"); DELETE FROM attempts; --',
  "' OR '1'='1",
  '\u0000',
  'nul\u0000inside',
  '\\0 \\n \\r \\Z \\b \\t \\%',
  '%_',
  'x\u001ay',
  '\u2028\u2029',
  'emoji 😀🎉',
  '中文字符',
  'é e\u0301',
];
/** Parts a concurrency key may hold (no control characters); business keys also get NUL. */
const KEY_PARTS = ["it's", '"q"', '\\', "\\'", "'); DELETE FROM tasks; --", "\\'); DELETE FROM tasks; --", '😀', '中文', 'é'];
const ckey = (i: number) => `${i}|${KEY_PARTS.join('|')}`;
const bkey = (i: number) => `${i}|${[...KEY_PARTS, '\u0000', 'a\u0000b'].join('|')}`;
const payload = (i: number) => ({ i, s: NASTY, joined: NASTY.join(''), keys: Object.fromEntries(NASTY.map((s) => [s, s])), n: 2 });
const OUTPUT = { out: NASTY, "'); DELETE FROM tasks; --": "\\'); DELETE FROM tasks; --", joined: NASTY.join('') };
const ERR_RETRY = { code: `E'"\\\\'😀`, message: NASTY.join(' ') };
const ERR_FAIL = { code: "\\'); DELETE FROM tasks; --", message: NASTY.slice().reverse().join('\\') };

let dir: string;
let server: EmbeddedServer;
let dsn: string;
let pool: Pool;
let gw: GatewayProcess;
let t: CredentialsFile;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-sqlmode-'));
  server = await startEmbeddedMariaDb({
    dataDir: dir,
    serverArgs: [`--sql-mode=${HOSTILE_MODE}`, '--innodb-flush-log-at-trx-commit=2', '--innodb-doublewrite=0'],
    log: () => {},
  });
  await ensureDatabase(server, 'orbit');
  dsn = server.dsn('orbit');
  pool = createPool(dsn, { connectionLimit: 2 });
  await migrateUp(pool);
  t = await bootstrap(pool, { application: 'a', namespace: 'n', environment: 'test', queues: ['q'], workerAccess: true, url: '' });
  gw = await startGateway(dsn);
});
afterAll(async () => {
  await assertNoOpenRawSockets();
  await stopAllGateways();
  await pool?.end().catch(() => {});
  await server?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const sorted = (mode: string) => mode.split(',').sort().join(',');

describe('a server whose sql_mode is NO_BACKSLASH_ESCAPES,ANSI_QUOTES', () => {
  it("runs every Orbit connection under Orbit's sql_mode and READ COMMITTED, also one opened after the last was killed", async () => {
    const raw = await mysql.createConnection(parseDsn(dsn));
    const small = createPool(dsn, { connectionLimit: 1 });
    try {
      // The server's own default really is hostile (what a connection without Orbit's setup gets).
      const [[dflt]] = await raw.query<RowDataPacket[]>('SELECT @@SESSION.sql_mode AS mode');
      expect(dflt!.mode.split(',')).toEqual(expect.arrayContaining(HOSTILE_MODE.split(',')));
      const session = async () =>
        (await small.query<RowDataPacket[]>('SELECT @@SESSION.sql_mode AS mode, @@SESSION.tx_isolation AS iso, CONNECTION_ID() AS id'))[0][0]!;
      const first = await session();
      expect({ mode: sorted(first.mode), iso: first.iso }).toEqual({ mode: sorted(ORBIT_SQL_MODE), iso: 'READ-COMMITTED' });
      await raw.query(`KILL CONNECTION ${Number(first.id)}`);
      // The pool notices the loss (the query on the dead connection fails) and opens a new one.
      const next = await waitForValue(
        () => session().catch(() => null),
        (s) => s !== null && String(s.id) !== String(first.id),
        { timeout: 10_000, interval: 50 },
      );
      expect({ mode: sorted(next!.mode), iso: next!.iso }).toEqual({ mode: sorted(ORBIT_SQL_MODE), iso: 'READ-COMMITTED' });
    } finally {
      await small.end();
      await raw.end();
    }
  });

  it('a connection whose setup fails runs nothing under the server mode: the statement queued behind it gets the error', async () => {
    const saved = SESSION_SETUP[0]!;
    SESSION_SETUP[0] = "SET SESSION sql_mode = 'NO_SUCH_MODE'";
    const broken = createPool(dsn, { connectionLimit: 1 });
    try {
      await expect(broken.query("CREATE TABLE setup_probe (v VARCHAR(10) NOT NULL COMMENT 'probe') COMMENT='must never exist'")).rejects.toThrow(
        /cannot apply Orbit's session settings .*NO_SUCH_MODE/,
      );
    } finally {
      SESSION_SETUP[0] = saved;
      await broken.end();
    }
    const [rows] = await pool.query<RowDataPacket[]>(
      "SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'setup_probe'",
    );
    expect(Number(rows[0]!.n)).toBe(0);
  });

  it('quotes, backslashes, NUL and multi-byte text round-trip exactly (HTTP, task.assign, attempts, events); injection shapes change no table', async () => {
    const sub = await createSub(gw.url, t.token, { name: 'sqlmode', queue_id: t.queue_id, event_types: ['task.succeeded', 'task.failed'] });
    // Before any result: every table's existence, the contents of the tables the worker path
    // never writes, and the row counts of those it only updates (active counts, stream cursors).
    const snapshot = async () => {
      const [tables] = await pool.query<RowDataPacket[]>('SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY 1');
      const [sums] = await pool.query<RowDataPacket[]>('CHECKSUM TABLE namespaces, queues, credentials, schema_migrations');
      const [[n]] = await pool.query<RowDataPacket[]>('SELECT (SELECT COUNT(*) FROM applications) AS apps, (SELECT COUNT(*) FROM subscriptions) AS subs');
      return { tables: tables.map((r) => r.t), sums: sums.map((r) => `${r.Table}=${r.Checksum}`), apps: Number(n!.apps), subs: Number(n!.subs) };
    };

    const ids = [0, 1].map(
      async (i) => (await submitTask(gw.url, t, { payload: payload(i), concurrency_key: ckey(i), business_key: bkey(i), max_attempts: 3 })).id as string,
    );
    const [okId, failId] = await Promise.all(ids);
    const before = await snapshot();

    const w = await openRaw(gw.url, t.token);
    onTestFinished(() => w.close());
    w.send(hello([t.queue_id], { capacity: 4, concurrency_keys: true }));
    await w.next('hello.ok');
    const assigned = new Map<string, any>();
    for (let k = 0; k < 2; k++) {
      const a = await w.next('task.assign');
      assigned.set(a.task.id, a);
    }
    const check = (a: any, i: number) => {
      expect(a.task.payload).toEqual(payload(i));
      expect(a.task.concurrency_key).toBe(ckey(i));
      expect(a.task.business_key).toBe(bkey(i));
    };
    check(assigned.get(okId!), 0);
    check(assigned.get(failId!), 1);

    const finish = async (attemptId: string, result: Record<string, unknown>, state: string | null, dedup = false) => {
      if (!dedup) {
        w.send({ type: 'start', attempt_id: attemptId });
        await w.next('start.ok');
      }
      w.send({ type: 'result', attempt_id: attemptId, ...result });
      const ok = await w.next('result.ok');
      expect(ok).toMatchObject({ attempt_id: attemptId, deduplicated: dedup, ...(state ? { task_state: state } : {}) });
    };
    const okAttempt = assigned.get(okId!).attempt_id;
    await finish(okAttempt, { outcome: 'succeeded', output: OUTPUT }, 'SUCCEEDED');
    // The same result again compares the stored output with this one: equal, so deduplicated.
    await finish(okAttempt, { outcome: 'succeeded', output: OUTPUT }, null, true);
    await finish(assigned.get(failId!).attempt_id, { outcome: 'retry', error: ERR_RETRY, retry_after_ms: 0 }, null);
    const again = await w.next('task.assign', 20_000);
    check(again, 1);
    await finish(again.attempt_id, { outcome: 'failed', error: ERR_FAIL }, 'FAILED');

    const get = async (p: string) => {
      const r = await call(gw.url, 'GET', p, { token: t.token });
      expect(r.status, r.text).toBe(200);
      return r.body.data;
    };
    const okTask = (await get(`/v1/tasks/${okId}`)).task;
    expect(okTask).toMatchObject({ payload: payload(0), concurrency_key: ckey(0), business_key: bkey(0), state: 'SUCCEEDED' });
    expect(okTask.result).toEqual({ outcome: 'succeeded', output: OUTPUT });
    const failTask = (await get(`/v1/tasks/${failId}`)).task;
    expect(failTask).toMatchObject({ payload: payload(1), concurrency_key: ckey(1), business_key: bkey(1), state: 'FAILED' });
    expect(failTask.result).toMatchObject({ outcome: 'failed', error: ERR_FAIL });
    const attempts = (await get(`/v1/tasks/${failId}/attempts`)).attempts;
    expect(attempts.map((a: any) => a.error)).toEqual([ERR_RETRY, ERR_FAIL]);
    // The keys as filters (a WHERE on the escaped value) find their task.
    const q = (k: string, v: string) => `/v1/tasks?queue_id=${t.queue_id}&${k}=${encodeURIComponent(v)}`;
    expect((await get(q('concurrency_key', ckey(1)))).tasks.map((x: any) => x.id)).toEqual([failId]);
    expect((await get(q('business_key', bkey(0)))).tasks.map((x: any) => x.id)).toEqual([okId]);

    const deliveries = await lease(gw.url, t.token, sub.id);
    const byTask = new Map(deliveries.map((d: any) => [d.event.task_id, d.event]));
    expect(byTask.get(okId)?.result).toEqual(okTask.result);
    expect(byTask.get(failId)?.result).toEqual(failTask.result);

    // Nothing outside the result path changed, no table went away, every task is still there.
    expect(await snapshot()).toEqual(before);
    const [[counts]] = await pool.query<RowDataPacket[]>('SELECT (SELECT COUNT(*) FROM tasks) AS tasks, (SELECT COUNT(*) FROM attempts) AS attempts');
    expect({ tasks: Number(counts!.tasks), attempts: Number(counts!.attempts) }).toEqual({ tasks: 2, attempts: 3 });
    expect((await call(gw.url, 'GET', '/healthz')).status).toBe(200);
  });

  it("the SDK's fenced resource on the caller's own pool (the server's mode) keeps keys with quotes and backslashes exact", async () => {
    const own = mysql.createPool({ ...parseDsn(dsn), connectionLimit: 1 });
    try {
      const fence = createFencedResource(own, { table: 'sqlmode_fence' });
      await fence.ensureSchema();
      const key = ckey(7);
      const r = await fence.write({ namespace: "n's\\", key, token: 5n, operationId: "op'\\", apply: async () => {} });
      expect(r).toEqual({ applied: true, duplicate: false, highestToken: 5n });
      expect(await fence.highestToken("n's\\", key)).toBe(5n);
      const [rows] = await own.query<RowDataPacket[]>('SELECT HEX(resource_key) AS k FROM sqlmode_fence');
      expect(rows.map((x) => x.k)).toEqual([Buffer.from(key).toString('hex').toUpperCase()]);
    } finally {
      await own.end();
    }
  });
});
