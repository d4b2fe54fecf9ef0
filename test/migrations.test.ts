// orbit-migrate and the gateway's start-up checks against real databases: orbit-migrate's main()
// in-process for most cases, its bin as real processes for concurrent `up`s and a few bad usages;
// the gateway (`orbit`) always as a real process.
import http from 'node:http';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import mysql from 'mysql2/promise';
import { nanoid } from 'nanoid';
import WebSocket from 'ws';
import { createTestDb, newTenant, serverDsn, type TestDb } from './support/db.js';
import { binPath, childEnv, lines, runBin, runMain } from './support/cli.js';
import { main as orbitMigrate } from '../server/cli/orbit-migrate.js';
import { listMigrations } from '../server/mariadb/migrations.js';

const port = inject('mysqlPort');
const created: string[] = [];
const children = new Set<ReturnType<typeof spawn>>();
let migrated: TestDb;

async function adminConn() {
  return mysql.createConnection({ host: '127.0.0.1', port, user: 'orbit', password: 'orbit-local' });
}

/** A new database with nothing in it. */
async function emptyDb(): Promise<{ name: string; dsn: string }> {
  const name = `t_${nanoid(10).replace(/[^A-Za-z0-9]/g, 'x')}`;
  const c = await adminConn();
  await c.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4`);
  await c.end();
  created.push(name);
  return { name, dsn: serverDsn(name, port) };
}

async function q<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
  const c = await adminConn();
  try {
    const [rows] = await c.query(sql, params);
    return rows as T[];
  } finally {
    await c.end();
  }
}

const migrate = (dsn: string, cmd: string) => runMain(orbitMigrate, [cmd], { ORBIT_MYSQL_DSN: dsn });
/** The same through the built bin, a real process. */
const migrateProcess = (dsn: string, cmd: string) => runBin('orbit-migrate', [cmd], { ORBIT_MYSQL_DSN: dsn });
const gateway = (env: Record<string, string | undefined>) => runBin('orbit', [], { ORBIT_HTTP_ADDR: '127.0.0.1:0', ORBIT_LOG_LEVEL: 'info', ...env }, 20_000);

const KNOWN = listMigrations();
const LATEST = Math.max(...KNOWN.map((m) => m.version));

beforeAll(async () => {
  migrated = await createTestDb();
});
afterAll(async () => {
  for (const ch of children) if (ch.exitCode === null && ch.signalCode === null) ch.kill('SIGKILL');
  await migrated?.drop();
  const c = await adminConn();
  for (const name of created) await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
  await c.end();
});

describe('orbit-migrate', () => {
  it('knows 000001 and names files 000001_<name>.sql', () => {
    expect(KNOWN[0]!.version).toBe(1);
    expect(KNOWN.map((m) => m.version)).toEqual(KNOWN.map((_, i) => i + 1));
  });

  it('up applies every migration on an empty database; a second run says current', async () => {
    const db = await emptyDb();
    const first = await migrate(db.dsn, 'up');
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('applying migration 000001_');
    expect(first.stdout).toContain(`applied ${KNOWN.length} migration(s)`);
    const rows = await q<{ version: number; name: string; checksum: string }>(
      `SELECT version, name, checksum FROM \`${db.name}\`.schema_migrations ORDER BY version`,
    );
    expect(rows.map((r) => Number(r.version))).toEqual(KNOWN.map((m) => m.version));
    expect(rows.map((r) => r.checksum)).toEqual(KNOWN.map((m) => m.checksum));
    const second = await migrate(db.dsn, 'up');
    expect(second.code).toBe(0);
    expect(second.stdout.trim()).toBe('schema is current');
    expect(await q(`SELECT version FROM \`${db.name}\`.schema_migrations`)).toHaveLength(KNOWN.length);
  });

  it('status reports pending migrations (exit 3), then current (exit 0), and never writes', async () => {
    const db = await emptyDb();
    const before = await migrate(db.dsn, 'status');
    expect(before.code).toBe(3);
    expect(lines(before.stdout)).toEqual([`current=0 expected=${LATEST} pending=[${KNOWN.map((m) => m.version).join(',')}] unknown=[]`]);
    // status is read-only: not even the bookkeeping table appears.
    expect(await q(`SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?`, [db.name])).toEqual([]);
    expect((await migrate(db.dsn, 'up')).code).toBe(0);
    const after = await migrate(db.dsn, 'status');
    expect(after.code).toBe(0);
    expect(lines(after.stdout)).toEqual([`current=${LATEST} expected=${LATEST} pending=[] unknown=[]`]);
    await q(
      `INSERT INTO \`${db.name}\`.schema_migrations (version, name, checksum, applied_at) VALUES (999999, 'from_the_future', REPEAT('0', 64), UTC_TIMESTAMP(3))`,
    );
    const newer = await migrate(db.dsn, 'status');
    expect(newer.code).toBe(3);
    expect(lines(newer.stdout)).toEqual([`current=999999 expected=${LATEST} pending=[] unknown=[999999]`]);
  });

  it('bad usage and configuration: exit 1 with one line', async () => {
    const db = await emptyDb();
    // Every case in-process; the first two also through the bin (a real process).
    const run = (args: string[], env: Record<string, string>) => runMain(orbitMigrate, args, env);
    for (const [args, env] of [
      [[], { ORBIT_MYSQL_DSN: db.dsn }],
      [['down'], { ORBIT_MYSQL_DSN: db.dsn }],
      [['up'], {}],
      [['up'], { ORBIT_MYSQL_DSN: 'garbage' }],
      [['up'], { ORBIT_MYSQL_DSN: 'mysql://orbit:orbit-local@127.0.0.1:1/x' }],
    ] as [string[], Record<string, string>][]) {
      const r = await run(args, env);
      expect(r.code, JSON.stringify(args)).toBe(1);
      expect(lines(r.stderr), r.stderr).toHaveLength(1);
    }
    for (const [args, env] of [
      [[], { ORBIT_MYSQL_DSN: db.dsn }],
      [['up'], {}],
    ] as [string[], Record<string, string>][]) {
      const r = await runBin('orbit-migrate', args, env);
      expect(r.code, `${JSON.stringify(args)} (process)`).toBe(1);
      expect(lines(r.stderr), r.stderr).toHaveLength(1);
    }
    expect(await q(`SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?`, [db.name])).toEqual([]);
  });

  it('three `up` processes at once on one empty database all succeed and apply each migration once', async () => {
    const db = await emptyDb();
    const results = await Promise.all([0, 1, 2].map(() => migrateProcess(db.dsn, 'up')));
    for (const r of results) {
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
    }
    // Exactly one process applied the migrations; the others found the schema current.
    expect(results.filter((r) => r.stdout.includes('applying migration 000001_'))).toHaveLength(1);
    expect(results.filter((r) => r.stdout.trim() === 'schema is current')).toHaveLength(2);
    const rows = await q<{ version: number; c: number }>(
      `SELECT version, COUNT(*) AS c FROM \`${db.name}\`.schema_migrations GROUP BY version ORDER BY version`,
    );
    expect(rows.map((r) => [Number(r.version), Number(r.c)])).toEqual(KNOWN.map((m) => [m.version, 1]));
    // The result is the same schema as a single-process migration.
    const tables = async (name: string) =>
      (await q<{ t: string }>(`SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME`, [name])).map((r) => r.t);
    expect(await tables(db.name)).toEqual(await tables(migrated.name));
  });
  it('a lock row left by a killed runner holds the next `up` until its lease ends (database clock), then it takes over', async () => {
    const db = await emptyDb();
    // What a runner killed with -9 while holding the lock leaves behind: its row, lease running.
    await q(`CREATE TABLE \`${db.name}\`.schema_migrations_lock LIKE \`${migrated.name}\`.schema_migrations_lock`);
    await q(`INSERT INTO \`${db.name}\`.schema_migrations_lock VALUES (1, 'dead0000000000000000000000000000', UTC_TIMESTAMP(3) + INTERVAL 1 HOUR)`);
    let finished = false;
    const up = migrate(db.dsn, 'up').finally(() => (finished = true));
    // The waiting runner polls the row; while the lease holds it applies nothing.
    await new Promise((r) => setTimeout(r, 1500));
    expect(finished).toBe(false);
    expect(await q(`SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME <> 'schema_migrations_lock'`, [db.name])).toEqual(
      [],
    );
    // The lease ends (backdated instead of waiting an hour): the runner takes the lock and migrates.
    await q(`UPDATE \`${db.name}\`.schema_migrations_lock SET expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND`);
    const r = await up;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('applying migration 000001_');
    expect(await q(`SELECT version FROM \`${db.name}\`.schema_migrations`)).toHaveLength(KNOWN.length);
    // And it gave the lock back.
    expect(await q(`SELECT holder, expires_at FROM \`${db.name}\`.schema_migrations_lock`)).toEqual([{ holder: null, expires_at: null }]);
  });
});

describe('schema', () => {
  it('every table and every column has a non-empty COMMENT', async () => {
    const tables = await q<{ name: string; comment: string }>(
      `SELECT TABLE_NAME AS name, TABLE_COMMENT AS comment FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?`,
      [migrated.name],
    );
    expect(tables.length).toBeGreaterThan(5);
    expect(tables.filter((t) => !t.comment || t.comment.trim() === '').map((t) => t.name)).toEqual([]);
    const cols = await q<{ t: string; c: string; comment: string }>(
      `SELECT TABLE_NAME AS t, COLUMN_NAME AS c, COLUMN_COMMENT AS comment FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ?`,
      [migrated.name],
    );
    expect(cols.length).toBeGreaterThan(30);
    expect(cols.filter((c) => !c.comment || c.comment.trim() === '').map((c) => `${c.t}.${c.c}`)).toEqual([]);
  });

  it('has no foreign keys', async () => {
    const fks = await q(`SELECT CONSTRAINT_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ?`, [migrated.name]);
    expect(fks).toEqual([]);
    const tc = await q(`SELECT CONSTRAINT_NAME FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = ? AND CONSTRAINT_TYPE = 'FOREIGN KEY'`, [
      migrated.name,
    ]);
    expect(tc).toEqual([]);
    const refs = await q(`SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = ? AND REFERENCED_TABLE_NAME IS NOT NULL`, [
      migrated.name,
    ]);
    expect(refs).toEqual([]);
  });
});

describe('gateway start-up checks', () => {
  it('refuses an unmigrated database, naming `orbit-migrate up`', async () => {
    const db = await emptyDb();
    const r = await gateway({ ORBIT_MYSQL_DSN: db.dsn });
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBeNull();
    expect(lines(r.stderr), r.stderr).toHaveLength(1);
    expect(r.stderr).toContain('orbit-migrate up');
    expect(r.stdout).not.toContain('ready');
  });

  it('refuses a database with only part of the migrations recorded', async () => {
    if (KNOWN.length < 2) {
      // With one migration, "older" is the same as "unmigrated" above plus an empty record table.
      const db = await emptyDb();
      await q(
        `CREATE TABLE \`${db.name}\`.schema_migrations (version INT UNSIGNED NOT NULL PRIMARY KEY, name VARCHAR(128) NOT NULL, checksum CHAR(64) NOT NULL, applied_at DATETIME(3) NOT NULL)`,
      );
      const r = await gateway({ ORBIT_MYSQL_DSN: db.dsn });
      expect(r.code).not.toBe(0);
      expect(lines(r.stderr), r.stderr).toHaveLength(1);
      expect(r.stderr).toContain('orbit-migrate up');
      return;
    }
  });

  it('refuses a database with an unknown (newer) migration row', async () => {
    const db = await emptyDb();
    expect((await migrate(db.dsn, 'up')).code).toBe(0);
    await q(
      `INSERT INTO \`${db.name}\`.schema_migrations (version, name, checksum, applied_at) VALUES (?, 'from_the_future', REPEAT('0', 64), UTC_TIMESTAMP(3))`,
      [LATEST + 1],
    );
    const r = await gateway({ ORBIT_MYSQL_DSN: db.dsn });
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBeNull();
    expect(lines(r.stderr), r.stderr).toHaveLength(1);
    expect(r.stderr).toMatch(/newer/);
    expect(r.stdout).not.toContain('ready');
    // orbit-migrate up does not "fix" a newer schema either: it reports it and leaves it alone.
    const up = await migrate(db.dsn, 'up');
    expect(up.code).toBe(1);
    expect(lines(up.stderr)).toHaveLength(1);
    expect(up.stderr).toMatch(/newer/);
  });

  const bad: [string, Record<string, string | undefined>, RegExp][] = [
    ['ORBIT_HTTP_ADDR without a port', { ORBIT_HTTP_ADDR: 'localhost' }, /ORBIT_HTTP_ADDR/],
    ['ORBIT_HTTP_ADDR with a port out of range', { ORBIT_HTTP_ADDR: '127.0.0.1:70000' }, /ORBIT_HTTP_ADDR/],
    ['ORBIT_HTTP_ADDR with a non-numeric port', { ORBIT_HTTP_ADDR: '127.0.0.1:http' }, /ORBIT_HTTP_ADDR/],
    ['ORBIT_HTTP_ADDR empty', { ORBIT_HTTP_ADDR: '' }, /ORBIT_HTTP_ADDR/],
    ['ORBIT_HTTP_ADDR with a space in the host', { ORBIT_HTTP_ADDR: 'local host:8080' }, /ORBIT_HTTP_ADDR/],
    ['ORBIT_LOG_LEVEL unknown', { ORBIT_LOG_LEVEL: 'verbose' }, /ORBIT_LOG_LEVEL/],
    ['ORBIT_LOG_LEVEL empty', { ORBIT_LOG_LEVEL: '' }, /ORBIT_LOG_LEVEL/],
    ['ORBIT_MYSQL_DSN missing', { ORBIT_MYSQL_DSN: undefined }, /ORBIT_MYSQL_DSN/],
    ['ORBIT_MYSQL_DSN garbage', { ORBIT_MYSQL_DSN: 'garbage' }, /ORBIT_MYSQL_DSN/],
    ['ORBIT_MYSQL_DSN of another scheme', { ORBIT_MYSQL_DSN: 'postgres://u:p@127.0.0.1:5432/db' }, /ORBIT_MYSQL_DSN/],
    ['ORBIT_MYSQL_DSN without a database', { ORBIT_MYSQL_DSN: 'mysql://u:p@127.0.0.1:3306/' }, /ORBIT_MYSQL_DSN/],
    ['ORBIT_NODE_ID with spaces', { ORBIT_NODE_ID: 'node one' }, /ORBIT_NODE_ID/],
    ['ORBIT_MAX_BODY_BYTES not a number', { ORBIT_MAX_BODY_BYTES: 'lots' }, /ORBIT_MAX_BODY_BYTES/],
  ];
  for (const [name, env, re] of bad) {
    it(`invalid configuration (${name}) stops the gateway with one clear line`, async () => {
      const r = await gateway({ ORBIT_MYSQL_DSN: migrated.dsn, ...env });
      expect(r.code, r.stdout + r.stderr).not.toBe(0);
      expect(r.code).not.toBeNull(); // it exited by itself
      const errLines = lines(r.stderr);
      expect(errLines, r.stderr).toHaveLength(1);
      expect(errLines[0]).toMatch(re);
      expect(r.stdout).toBe('');
    });
  }

  it('an unreachable database stops the gateway with one line', async () => {
    const r = await gateway({ ORBIT_MYSQL_DSN: 'mysql://orbit:orbit-local@127.0.0.1:1/nothing' });
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBeNull();
    expect(lines(r.stderr), r.stderr).toHaveLength(1);
    expect(r.stderr).toMatch(/ECONNREFUSED|unreachable|connect/i);
  });

  it('a wrong password stops the gateway with one line', async () => {
    const r = await gateway({ ORBIT_MYSQL_DSN: `mysql://orbit:wrong@127.0.0.1:${port}/${migrated.name}` });
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBeNull();
    expect(lines(r.stderr), r.stderr).toHaveLength(1);
    expect(r.stderr).toMatch(/denied/i);
  });

  it('a port already in use stops the gateway with one line', async () => {
    const srv = net.createServer();
    await new Promise<void>((res) => srv.listen(0, '127.0.0.1', () => res()));
    const busy = (srv.address() as net.AddressInfo).port;
    try {
      const r = await gateway({ ORBIT_MYSQL_DSN: migrated.dsn, ORBIT_HTTP_ADDR: `127.0.0.1:${busy}` });
      expect(r.code).not.toBe(0);
      expect(r.code).not.toBeNull();
      expect(lines(r.stderr), r.stderr).toHaveLength(1);
      expect(r.stderr).toMatch(/EADDRINUSE|in use/);
    } finally {
      srv.close();
    }
  });
});

describe('gateway shutdown', () => {
  /** Starts `orbit` and resolves with its URL once ready. */
  async function start() {
    const child = spawn(process.execPath, [binPath('orbit')], {
      env: childEnv({ ORBIT_MYSQL_DSN: migrated.dsn, ORBIT_HTTP_ADDR: '127.0.0.1:0', ORBIT_LOG_LEVEL: 'warn' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let out = '';
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.once('exit', (code, signal) => res({ code, signal })));
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        const m = /"url":"([^"]+)"/.exec(out);
        if (out.includes('orbit gateway ready') && m) resolve(m[1]!);
      });
      void exited.then(() => reject(new Error(`gateway exited early: ${out}${err}`)));
      setTimeout(() => reject(new Error(`gateway not ready: ${out}${err}`)), 20_000);
    });
    return { child, url, exited, stderr: () => err };
  }

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} makes the gateway exit 0 promptly, even with an idle keep-alive connection open`, async () => {
      const g = await start();
      const agent = new http.Agent({ keepAlive: true });
      const status = await new Promise<number>((resolve, reject) => {
        http
          .get(`${g.url}/healthz`, { agent }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          })
          .on('error', reject);
      });
      expect(status).toBe(200);
      // The single-writer check recorded the gateway's database node (no Galera here).
      const nodes = `SELECT wsrep_on, wsrep_node_name FROM \`${migrated.name}\`.gateway_nodes`;
      expect(await q(nodes)).toEqual([{ wsrep_on: 0, wsrep_node_name: null }]);
      const t0 = Date.now();
      g.child.kill(signal);
      const { code } = await g.exited;
      const took = Date.now() - t0;
      agent.destroy();
      expect(code, g.stderr()).toBe(0);
      // A gateway that stops removes its row.
      expect(await q(nodes)).toEqual([]);
      expect(took).toBeLessThan(5_000);
      // The port is closed.
      await expect(fetch(`${g.url}/healthz`)).rejects.toThrow();
    });
  }

  it('SIGTERM with a connected worker: goaway, close 1001, exit 0 within 10 s', async () => {
    const t = await newTenant(migrated, { workerAccess: true });
    const g = await start();
    const ws = new WebSocket(`${g.url.replace('http', 'ws')}/v1/workers/connect`, 'orbit.worker.v1', {
      headers: { authorization: `Bearer ${t.token}` },
    });
    const frames: { type: string }[] = [];
    const closed = new Promise<number>((res) => ws.once('close', (code) => res(code)));
    ws.on('message', (d) => frames.push(JSON.parse(String(d)) as { type: string }));
    await new Promise<void>((res, rej) => {
      ws.once('open', () => res());
      ws.once('error', rej);
    });
    ws.send(JSON.stringify({ type: 'hello', protocol: 1, worker_id: `w-${nanoid(6).replace(/[^A-Za-z0-9]/g, 'x')}`, queues: [t.queue_id], capacity: 1 }));
    // Until hello.ok; an error frame before it ends the wait (and fails the test) at once.
    await vi.waitFor(
      () => {
        if (!frames.some((f) => f.type === 'hello.ok' || f.type === 'error')) throw new Error(`no hello.ok within 10 s: ${JSON.stringify(frames)}`);
      },
      { timeout: 10_000, interval: 20 },
    );
    if (!frames.some((f) => f.type === 'hello.ok') && frames.some((f) => f.type === 'error')) throw new Error(JSON.stringify(frames));
    expect(frames.map((f) => f.type)).toContain('hello.ok');
    const t0 = Date.now();
    g.child.kill('SIGTERM');
    const closeCode = await closed;
    const { code } = await g.exited;
    expect(code, g.stderr()).toBe(0);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(frames.map((f) => f.type)).toContain('goaway');
    expect(closeCode).toBe(1001);
  });
});
