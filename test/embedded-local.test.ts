// The local database of `npm start` as a new user meets it: the CLIs find it through
// ORBIT_HOME without ORBIT_MYSQL_DSN and say which database they use; the bootstrap line of docs/operations.md
// works as written; orbit-admin's read commands; a lock excludes two concurrent starts on one home; a normal
// (non-root) user can run it.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { binPath, childEnv, runBin, runMain, lines } from './support/cli.js';
import { main as orbitAdmin } from '../server/cli/orbit-admin.js';
import { call, ikey } from './support/http.js';
import { alive, serversUnder, waitUntil } from './support/embedded.js';

let base: string;
const started = new Set<ChildProcess>();
const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;

interface Start {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Spawns `npm start`'s wrapper on `home` (as `uid` when given). */
function spawnStart(home: string, uid?: number): Start {
  const child = spawn(process.execPath, [binPath('start-embedded')], {
    env: childEnv({ ORBIT_HOME: home, ORBIT_HTTP_ADDR: '127.0.0.1:0', HOME: path.dirname(home) }),
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: os.tmpdir(),
    ...(uid !== undefined ? { uid, gid: uid } : {}),
  });
  started.add(child);
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  return { child, output: () => out, exited };
}

/** Resolves with the gateway URL once the wrapper says it listens; rejects if it exits first. */
async function ready(s: Start, ms = 90_000): Promise<string> {
  let dead = false;
  void s.exited.then(() => (dead = true));
  const ok = await waitUntil(() => dead || /"msg":"gateway listening on (http:[^"]+)"/.test(s.output()), ms);
  const m = /"msg":"gateway listening on (http:[^"]+)"/.exec(s.output());
  if (!ok || dead || !m) throw new Error(`npm start did not become ready:\n${s.output()}`);
  return m[1]!;
}

async function stop(s: Start): Promise<number | null> {
  s.child.kill('SIGTERM');
  return s.exited;
}

beforeAll(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-local-'));
  fs.chmodSync(base, 0o755);
});

afterAll(async () => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const pid of serversUnder(base)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  await waitUntil(() => serversUnder(base).length === 0, 10_000);
  fs.rmSync(base, { recursive: true, force: true });
});

describe('CLIs on the embedded database of npm start', () => {
  let home: string;
  let s: Start;
  let url: string;
  let creds: { token: string; queue_id: string; mysql_dsn: string };
  // orbit-admin's main() in-process; the bins run as real processes in the first test.
  const admin = (args: string[]) => runMain(orbitAdmin, args, { ORBIT_HOME: home });

  beforeAll(async () => {
    home = path.join(base, 'cli', '.orbit');
    s = spawnStart(home);
    url = await ready(s);
    creds = JSON.parse(fs.readFileSync(path.join(home, 'dev.credentials.json'), 'utf8'));
  }, 120_000);

  it('orbit-admin and orbit-migrate find it without ORBIT_MYSQL_DSN and name it (password hidden)', async () => {
    const port = /:(\d+)\/orbit$/.exec(creds.mysql_dsn)![1];
    const r = await runBin('orbit-admin', ['queues', 'list'], { ORBIT_HOME: home });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe(
      `orbit-admin: using mysql://orbit:***@127.0.0.1:${port}/orbit (the embedded database of npm start (${path.join(home, 'dev.credentials.json')}))\n`,
    );
    expect(r.stdout).toMatch(new RegExp(`^${creds.queue_id}\\s+initial\\s+dev\\s+active\\s+0\\s+0$`, 'm'));
    const m = await runBin('orbit-migrate', ['status'], { ORBIT_HOME: home });
    expect(m.code, m.stderr).toBe(0);
    expect(m.stderr).toContain(`orbit-migrate: using mysql://orbit:***@127.0.0.1:${port}/orbit`);
  });

  it('the bootstrap line of docs/operations.md with its placeholders works as written', async () => {
    const out = path.join(base, 'emails.credentials.json');
    const r = await admin([
      'bootstrap',
      '--application',
      'shop',
      '--namespace',
      'shop',
      '--environment',
      'dev',
      '--queue',
      'emails',
      '--worker-access',
      '--output',
      out,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(fs.readFileSync(out, 'utf8')).queues.emails).toMatch(/^[0-9a-f]{32}$/);
  });

  it('tasks list --queue NAME --state S, and task get ID', async () => {
    const sub = await call(url, 'POST', '/v1/tasks', {
      token: creds.token,
      key: ikey('cli'),
      body: {
        queue_id: creds.queue_id,
        handler: 'object.update',
        handler_version: 'v1',
        payload_version: 'v1',
        payload: { object_ref: 'objects/1' },
        concurrency_key: 'object/1',
      },
    });
    expect(sub.status).toBe(201);
    const id = sub.body.data.task.id as string;
    const list = await admin(['tasks', 'list', '--queue', 'initial', '--state', 'WAITING']);
    expect(list.code, list.stderr).toBe(0);
    expect(lines(list.stdout)[0]).toMatch(/^ID\s+STATE\s+HANDLER\s+ATTEMPTS\s+CREATED\s+KEY$/);
    expect(list.stdout).toMatch(new RegExp(`^${id}\\s+WAITING\\s+object\\.update@v1\\s+0/3\\s+\\S+\\s+object/1$`, 'm'));
    const none = await admin(['tasks', 'list', '--queue', creds.queue_id, '--state', 'SUCCEEDED']);
    expect(none.stdout).toBe(`no tasks in state SUCCEEDED in queue ${creds.queue_id}\n`);
    const bad = await admin(['tasks', 'list', '--queue', 'initial', '--state', 'DONE']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--state DONE is not one of WAITING, LEASED, RUNNING/);
    const got = await admin(['task', 'get', id, '--json']);
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ task: { id, state: 'WAITING', payload: { object_ref: 'objects/1' } }, attempts: [] });
  });

  it('a second npm start on the same home stops in seconds with one line; one server keeps running', async () => {
    const t0 = Date.now();
    const second = spawnStart(home);
    expect(await second.exited, second.output()).toBe(1);
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(second.output()).toMatch(/another npm start is running on .*; stop it first/);
    expect(serversUnder(path.join(home, 'mysql'))).toHaveLength(1);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
  });

  it('once npm start has stopped, the CLIs say to start it', async () => {
    expect(await stop(s)).toBe(0);
    const r = await admin(['queues', 'list']);
    expect(r.code).toBe(1);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/the embedded database of .* is not running: start it with `npm start`/);
    const none = await runMain(orbitAdmin, ['queues', 'list'], { ORBIT_HOME: path.join(base, 'nothing-here') });
    expect(none.stderr).toMatch(/ORBIT_MYSQL_DSN is not set and no running `npm start` database was found/);
  });
});

describe('start-up', () => {
  it('two npm start at the same instant on a fresh home: one runs, the other stops with one line', async () => {
    const home = path.join(base, 'race', '.orbit');
    const [a, b] = [spawnStart(home), spawnStart(home)];
    const winner = await Promise.race([ready(a).then(() => a), ready(b).then(() => b)]);
    const loser = winner === a ? b : a;
    expect(await loser.exited, loser.output()).toBe(1);
    expect(loser.output()).toMatch(/another npm start is running/);
    expect(loser.output()).not.toMatch(/ECONNREFUSED/);
    expect(serversUnder(home)).toHaveLength(1);
    expect(await stop(winner)).toBe(0);
    expect(await waitUntil(() => serversUnder(home).length === 0, 5_000)).toBe(true);
  }, 120_000);

  it('runs as a normal (non-root) user: its own server under ORBIT_HOME, owned by that user', async () => {
    const dir = path.join(base, 'user');
    fs.mkdirSync(dir);
    if (isRoot) fs.chownSync(dir, NOBODY, NOBODY);
    const home = path.join(dir, '.orbit');
    const s = spawnStart(home, isRoot ? NOBODY : undefined);
    const url = await ready(s);
    const creds = JSON.parse(fs.readFileSync(path.join(home, 'dev.credentials.json'), 'utf8')) as { token: string; queue_id: string };
    const r = await call(url, 'GET', `/v1/queues/${creds.queue_id}`, { token: creds.token });
    expect(r.status).toBe(200);
    const [pid] = serversUnder(home);
    const uid = Number(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
    expect(uid).toBe(isRoot ? NOBODY : process.getuid!());
    expect(fs.statSync(path.join(home, 'mysql', 'data')).uid).toBe(uid);
    expect(await stop(s)).toBe(0);
    expect(await waitUntil(() => !alive(pid!), 5_000)).toBe(true);
  }, 120_000);
});
