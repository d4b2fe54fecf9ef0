// `npm start` (node dist/server/cli/start-embedded.js) without ORBIT_MYSQL_DSN: its own MariaDB,
// migrations, development credentials, the gateway; SIGTERM stops both; a restart reuses them.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../server/mariadb/embedded-mariadb.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { binPath, childEnv, readCredentialsFile } from './support/cli.js';
import { call, ikey } from './support/http.js';
import { alive, serversUnder, waitUntil } from './support/embedded.js';

let home: string;
const started = new Set<ChildProcess>();

/** A start-embedded process: its stdout and stderr in one text, and its exit. */
interface Spawned {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

interface Started extends Spawned {
  url: string;
}

/** Spawns `npm start`'s bin with `env` (ORBIT_* of this process removed); killed in afterAll. */
function spawnStartEmbedded(env: Record<string, string>): Spawned {
  const child = spawn(process.execPath, [binPath('start-embedded')], { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  started.add(child);
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.once('exit', (code, signal) => res({ code, signal })));
  return { child, output: () => out, exited };
}

async function startEmbedded(port: number): Promise<Started> {
  const { child, output, exited } = spawnStartEmbedded({ ORBIT_HOME: home, ORBIT_HTTP_ADDR: `127.0.0.1:${port}`, ORBIT_LOG_LEVEL: 'info' });
  let dead = false;
  void exited.then(() => (dead = true));
  const url = `http://127.0.0.1:${port}`;
  const ready = await waitUntil(async () => {
    if (dead) return true;
    try {
      return (await fetch(`${url}/readyz`)).status === 200;
    } catch {
      return false;
    }
  }, 90_000);
  if (!ready || dead) throw new Error(`start-embedded did not become ready (exited=${dead}):\n${output()}`);
  return { child, url, output, exited };
}

beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-home-'));
});

afterAll(async () => {
  // Whatever happened, leave no process behind: the wrappers first, then any database server
  // that still names this home's data directory.
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const pid of serversUnder(home)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  await waitUntil(() => serversUnder(home).length === 0, 10_000);
  fs.rmSync(home, { recursive: true, force: true });
});

const task = (queueId: string) => ({
  queue_id: queueId,
  handler: 'object.update',
  handler_version: 'v1',
  payload_version: 'v1',
  payload: { operation_ref: 'update-001', object_ref: 'objects/42' },
  concurrency_key: 'object/42',
});

describe('npm start (embedded)', () => {
  let first: CredentialsFile;
  let taskId: string;

  it('starts its own MariaDB, writes dev credentials, serves, and stops everything on SIGTERM', async () => {
    const port = await freePort();
    const s = await startEmbedded(port);
    const credFile = path.join(home, 'dev.credentials.json');
    expect(fs.existsSync(credFile)).toBe(true);
    expect(fs.statSync(credFile).mode & 0o777).toBe(0o600);
    first = readCredentialsFile(credFile);
    expect(Object.keys(first).sort()).toEqual(['application_id', 'environment', 'mysql_dsn', 'namespace_id', 'queue_id', 'queues', 'scopes', 'token', 'url']);
    expect(first.mysql_dsn).toMatch(/^mysql:\/\/orbit:[^@]+@127\.0\.0\.1:\d+\/orbit$/);
    // Every line is a pino JSON record (no plain "orbit: …" lines); the start-up lines say how to
    // connect (the DSN) and where the credentials are.
    const records = s
      .output()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(records.find((r) => r.msg.startsWith('embedded database: '))?.msg).toBe(`embedded database: ${first.mysql_dsn}`);
    expect(records.some((r) => r.msg === `gateway listening on ${s.url}`)).toBe(true);
    expect(first.url).toBe(s.url);
    expect(first.queue_id).toBe(first.queues.initial);
    expect(first.scopes).toEqual(expect.arrayContaining(['tasks:submit', 'tasks:read', 'workers:connect', 'workers:consume']));
    expect(s.output()).toContain(credFile);
    expect(s.output()).not.toContain(first.token);
    // Its own server, on a data directory under ORBIT_HOME.
    const servers = serversUnder(path.join(home, 'mysql'));
    expect(servers).toHaveLength(1);
    const key = ikey();
    const sub = await call(s.url, 'POST', '/v1/tasks', { token: first.token, key, body: task(first.queue_id) });
    expect(sub.status, sub.text).toBe(201);
    taskId = sub.body.data.task.id;

    const t0 = Date.now();
    s.child.kill('SIGTERM');
    const { code } = await s.exited;
    expect(code, s.output()).toBe(0);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(s.output()).toMatch(/"msg":"gateway stopped"/); // the shutdown line
    // The database server went with it.
    expect(await waitUntil(() => servers.every((p) => !alive(p)) && serversUnder(home).length === 0, 5_000)).toBe(true);
    await expect(fetch(`${s.url}/healthz`)).rejects.toThrow();
  });

  it('a second start reuses the credentials file, its token and the data', async () => {
    const port = await freePort();
    const s = await startEmbedded(port);
    const again = readCredentialsFile(path.join(home, 'dev.credentials.json'));
    // Same credential, only the URL follows the new address; the database keeps its port.
    expect({ ...again, url: '' }).toEqual({ ...first, url: '' });
    expect(again.url).toBe(s.url);
    const read = await call(s.url, 'GET', `/v1/tasks/${taskId}`, { token: again.token });
    expect(read.status).toBe(200);
    expect(serversUnder(home)).toHaveLength(1);
    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(0);
    expect(await waitUntil(() => serversUnder(home).length === 0, 5_000)).toBe(true);
  });

  it('recovers after the wrapper was killed with -9 (a leftover server holds the data directory)', async () => {
    const s = await startEmbedded(await freePort());
    const orphan = serversUnder(home);
    expect(orphan).toHaveLength(1);
    s.child.kill('SIGKILL');
    await s.exited;
    // kill -9 cannot take the child with it; the next start must cope with the leftover.
    const s2 = await startEmbedded(await freePort());
    const again = readCredentialsFile(path.join(home, 'dev.credentials.json'));
    expect(again.token).toBe(first.token);
    expect((await call(s2.url, 'GET', `/v1/tasks/${taskId}`, { token: again.token })).status).toBe(200);
    expect(serversUnder(home)).toHaveLength(1);
    expect(alive(orphan[0]!)).toBe(false);
    s2.child.kill('SIGTERM');
    expect((await s2.exited).code).toBe(0);
    expect(await waitUntil(() => serversUnder(home).length === 0, 5_000)).toBe(true);
  });

  it('an occupied HTTP port stops it with one line and stops its database too', async () => {
    const net = await import('node:net');
    const srv = net.createServer();
    await new Promise<void>((res) => srv.listen(0, '127.0.0.1', () => res()));
    const busy = (srv.address() as import('node:net').AddressInfo).port;
    try {
      const { output, exited } = spawnStartEmbedded({ ORBIT_HOME: home, ORBIT_HTTP_ADDR: `127.0.0.1:${busy}`, ORBIT_LOG_LEVEL: 'warn' });
      expect((await exited).code).toBe(1);
      expect(JSON.parse(output().trim().split('\n').at(-1)!)).toMatchObject({ level: 60, msg: expect.stringMatching(/ORBIT_HTTP_ADDR|EADDRINUSE/) });
      expect(await waitUntil(() => serversUnder(home).length === 0, 5_000)).toBe(true);
    } finally {
      srv.close();
    }
  });

  it('SIGTERM while the database is still starting stops everything and exits 0', async () => {
    const home2 = path.join(home, 'early');
    const { child, output, exited } = spawnStartEmbedded({ ORBIT_HOME: home2, ORBIT_HTTP_ADDR: `127.0.0.1:${await freePort()}`, ORBIT_LOG_LEVEL: 'warn' });
    // As soon as a server process exists for this home, before the gateway is up.
    expect(await waitUntil(() => serversUnder(home2).length > 0, 30_000), output()).toBe(true);
    child.kill('SIGTERM');
    expect((await exited).code, output()).toBe(0);
    expect(await waitUntil(() => serversUnder(home2).length === 0, 5_000)).toBe(true);
  });

  it('invalid configuration stops it with one line before any database is started', async () => {
    const home3 = path.join(home, 'badconfig');
    const { output, exited } = spawnStartEmbedded({ ORBIT_HOME: home3, ORBIT_HTTP_ADDR: '127.0.0.1:8080', ORBIT_LOG_LEVEL: 'chatty' });
    expect((await exited).code).toBe(1);
    const err = output();
    expect(err.trim().split('\n'), err).toHaveLength(1);
    expect(JSON.parse(err)).toMatchObject({ level: 60, msg: expect.stringMatching(/ORBIT_LOG_LEVEL/) });
    expect(fs.existsSync(path.join(home3, 'mysql'))).toBe(false);
  });
});
