// orbit-admin against a test database, checked through a real gateway: its main() in-process for
// most cases, the built bin as a real process for the first bootstrap, --help and a few bad
// arguments (the entry point, exit codes and streams of the real program).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createTestDb, type TestDb } from './support/db.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import { endOfFileChecks } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { lines, readCredentialsFile, runBin, runMain } from './support/cli.js';
import { main as orbitAdmin } from '../server/cli/orbit-admin.js';

let db: TestDb;
let gw: GatewayProcess;
let dir: string;

beforeAll(async () => {
  db = await createTestDb();
  gw = await startGateway(db.dsn);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-admin-'));
});
afterAll(async () => {
  try {
    await endOfFileChecks(db);
  } finally {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }
});

const admin = (args: string[], env: Record<string, string | undefined> = {}) => runMain(orbitAdmin, args, { ORBIT_MYSQL_DSN: db.dsn, ...env });
/** The same through the built bin, a real process. */
const adminProcess = (args: string[], env: Record<string, string | undefined> = {}) => runBin('orbit-admin', args, { ORBIT_MYSQL_DSN: db.dsn, ...env });

const BASE = ['tasks:submit', 'tasks:read', 'queues:manage', 'events:manage', 'events:read', 'schedules:manage', 'workflows:manage', 'workflows:run'];
const WORKER = ['workers:connect', 'workers:consume'];

let n = 0;
async function bootstrapFile(extra: string[], names: { app?: string; ns?: string; queues?: string[] } = {}, env: Record<string, string> = {}, run = admin) {
  n++;
  const file = path.join(dir, `creds-${n}.json`);
  const queueArgs = (names.queues ?? ['alpha', 'beta']).flatMap((q) => ['--queue', q]);
  const r = await run(
    [
      'bootstrap',
      '--application',
      names.app ?? `app${n}`,
      '--namespace',
      names.ns ?? 'main',
      '--environment',
      'test',
      ...queueArgs,
      ...extra,
      '--output',
      file,
    ],
    env,
  );
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return { file, creds: readCredentialsFile(file), result: r };
}

const task = (queueId: string, over: Record<string, unknown> = {}) => ({
  queue_id: queueId,
  handler: 'object.update',
  handler_version: 'v1',
  payload_version: 'v1',
  payload: { n: 1 },
  ...over,
});

const COUNTED = ['applications', 'namespaces', 'queues', 'credentials', 'audit_log', 'tasks'] as const;
type Counts = Record<(typeof COUNTED)[number] | 'quotas_hash' | 'revoked', number>;

async function counts(): Promise<Counts> {
  const out: Partial<Counts> = {};
  for (const t of COUNTED) {
    const [rows] = await db.pool.query(`SELECT COUNT(*) AS c FROM ${t}`);
    out[t] = Number((rows as { c: number }[])[0]!.c);
  }
  const [q] = await db.pool.query('SELECT GROUP_CONCAT(CONCAT(id, max_unfinished_tasks, max_active_attempts) ORDER BY id) AS s FROM applications');
  out.quotas_hash = String((q as { s: string | null }[])[0]!.s ?? '').length;
  const [r] = await db.pool.query('SELECT COUNT(*) AS c FROM credentials WHERE revoked_at IS NOT NULL');
  out.revoked = Number((r as { c: number }[])[0]!.c);
  return out as Counts; // every key is set above
}

describe('orbit-admin bootstrap', () => {
  it('writes the credentials file in the documented shape, mode 0600, queue_id = first queue (the bin, a real process)', async () => {
    const { file, creds, result } = await bootstrapFile([], { queues: ['alpha', 'beta'] }, { ORBIT_URL: gw.url }, adminProcess);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(Object.keys(creds).sort()).toEqual(['application_id', 'environment', 'namespace_id', 'queue_id', 'queues', 'scopes', 'token', 'url']);
    expect(creds.url).toBe(gw.url);
    expect(creds.environment).toBe('test');
    expect(Object.keys(creds.queues)).toEqual(['alpha', 'beta']);
    expect(creds.queue_id).toBe(creds.queues.alpha);
    expect(creds.queue_id).not.toBe(creds.queues.beta);
    for (const id of [creds.application_id, creds.namespace_id, creds.queue_id]) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect([...creds.scopes].sort()).toEqual([...BASE].sort());
    // Never prints the token.
    expect(result.stdout).not.toContain(creds.token);
    // The credential works, with queue_ids "*": both queues are visible and usable.
    const list = await call(gw.url, 'GET', '/v1/queues', { token: creds.token });
    expect(list.status).toBe(200);
    const ids = (list.body.data.queues as { id: string }[]).map((q) => q.id).sort();
    expect(ids).toEqual([creds.queues.alpha, creds.queues.beta].sort());
    const sub = await call(gw.url, 'POST', '/v1/tasks', { token: creds.token, key: ikey(), body: task(creds.queues.beta!) });
    expect(sub.status).toBe(201);
    const row = await db.pool.query('SELECT queue_ids, scopes FROM credentials WHERE namespace_id = ?', [creds.namespace_id]);
    expect((row[0] as { queue_ids: string | null }[])[0]!.queue_ids).toBeNull();
  });

  it('adds the worker scopes with --worker-access', async () => {
    const { file, creds } = await bootstrapFile(['--worker-access'], { queues: ['only'] });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect([...creds.scopes].sort()).toEqual([...BASE, ...WORKER].sort());
    expect(creds.queue_id).toBe(creds.queues.only);
    const [rows] = await db.pool.query('SELECT scopes FROM credentials WHERE namespace_id = ?', [creds.namespace_id]);
    expect(
      String((rows as { scopes: string }[])[0]!.scopes)
        .split(' ')
        .sort(),
    ).toEqual([...BASE, ...WORKER].sort());
  });

  it('reuses the application, namespace and queues by name and issues a new working token', async () => {
    const first = await bootstrapFile([], { app: 'reuse-app', ns: 'reuse-ns', queues: ['q1', 'q2'] });
    const before = await counts();
    const second = await bootstrapFile([], { app: 'reuse-app', ns: 'reuse-ns', queues: ['q2', 'q1', 'q3'] });
    const after = await counts();
    expect(second.creds.application_id).toBe(first.creds.application_id);
    expect(second.creds.namespace_id).toBe(first.creds.namespace_id);
    expect(second.creds.queues.q1).toBe(first.creds.queues.q1);
    expect(second.creds.queues.q2).toBe(first.creds.queues.q2);
    expect(second.creds.queue_id).toBe(first.creds.queues.q2); // first queue of this run
    expect(second.creds.queues.q3).toMatch(/^[0-9a-f]{32}$/);
    expect(after.applications).toBe(before.applications);
    expect(after.namespaces).toBe(before.namespaces);
    expect(after.queues).toBe(before.queues + 1);
    expect(after.credentials).toBe(before.credentials + 1);
    expect(second.creds.token).not.toBe(first.creds.token);
    // Both tokens work (a second bootstrap does not revoke the first).
    for (const t of [first.creds.token, second.creds.token]) {
      const r = await call(gw.url, 'GET', `/v1/queues/${first.creds.queues.q1}`, { token: t });
      expect(r.status).toBe(200);
    }
    const r3 = await call(gw.url, 'POST', '/v1/tasks', { token: second.creds.token, key: ikey(), body: task(second.creds.queues.q3!) });
    expect(r3.status).toBe(201);
  });

  it('refuses to reuse a queue name that is retired', async () => {
    const { creds } = await bootstrapFile([], { app: 'retired-app', queues: ['gone'] });
    await db.pool.query('UPDATE queues SET retired_at = UTC_TIMESTAMP(3) WHERE id = ?', [creds.queues.gone]);
    const file = path.join(dir, 'retired.json');
    const before = await counts();
    const r = await admin(['bootstrap', '--application', 'retired-app', '--namespace', 'main', '--environment', 'test', '--queue', 'gone', '--output', file]);
    expect(r.code).toBe(1);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/retired/);
    expect(fs.existsSync(file)).toBe(false);
    expect(await counts()).toEqual(before);
  });
});

describe('orbit-admin credential', () => {
  let base: CredentialsFile;
  beforeAll(async () => {
    base = (await bootstrapFile([], { app: 'cred-app', queues: ['alpha', 'beta'] })).creds;
  });

  async function create(args: string[]) {
    const r = await admin(['credential', 'create', '--namespace-id', base.namespace_id, ...args]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(lines(r.stdout)).toHaveLength(1);
    return JSON.parse(r.stdout) as { id: string; token: string; namespace_id: string; scopes: string[]; queue_ids: '*' | string[] };
  }

  it('creates a token with exactly the given scopes', async () => {
    const c = await create(['--scopes', 'tasks:read']);
    expect(c.scopes).toEqual(['tasks:read']);
    expect(c.queue_ids).toBe('*');
    expect(c.namespace_id).toBe(base.namespace_id);
    // tasks:read works...
    expect((await call(gw.url, 'GET', '/v1/tasks', { token: c.token })).status).toBe(200);
    // ...but nothing else.
    const sub = await call(gw.url, 'POST', '/v1/tasks', { token: c.token, key: ikey(), body: task(base.queues.alpha!) });
    expect(sub.status).toBe(403);
    expect(sub.body.error.code).toBe('PERMISSION_DENIED');
    const mk = await call(gw.url, 'POST', '/v1/queues', { token: c.token, key: ikey(), body: { name: 'nope' } });
    expect(mk.status).toBe(403);
    expect(mk.body.error.code).toBe('PERMISSION_DENIED');
  });

  it('limits a token to --queue-ids', async () => {
    const c = await create(['--scopes', 'tasks:submit tasks:read', '--queue-ids', base.queues.beta!]);
    expect(c.queue_ids).toEqual([base.queues.beta]);
    const ok = await call(gw.url, 'POST', '/v1/tasks', { token: c.token, key: ikey(), body: task(base.queues.beta!) });
    expect(ok.status).toBe(201);
    const denied = await call(gw.url, 'POST', '/v1/tasks', { token: c.token, key: ikey(), body: task(base.queues.alpha!) });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('PERMISSION_DENIED');
    // Reads of the other queue's tasks are refused too.
    const other = await call(gw.url, 'POST', '/v1/tasks', { token: base.token, key: ikey(), body: task(base.queues.alpha!) });
    expect(other.status).toBe(201);
    const read = await call(gw.url, 'GET', `/v1/tasks/${other.body.data.task.id}`, { token: c.token });
    expect(read.status).toBe(403);
    const readOwn = await call(gw.url, 'GET', `/v1/tasks/${ok.body.data.task.id}`, { token: c.token });
    expect(readOwn.status).toBe(200);
  });

  it('accepts comma-separated scopes and several queue ids', async () => {
    const c = await create(['--scopes', 'tasks:submit,tasks:read', '--queue-ids', `${base.queues.alpha},${base.queues.beta}`]);
    expect([...c.scopes].sort()).toEqual(['tasks:read', 'tasks:submit']);
    expect([...(c.queue_ids as string[])].sort()).toEqual([base.queues.alpha, base.queues.beta].sort());
    for (const q of [base.queues.alpha!, base.queues.beta!]) {
      expect((await call(gw.url, 'POST', '/v1/tasks', { token: c.token, key: ikey(), body: task(q) })).status).toBe(201);
    }
  });

  it('revoke makes the token answer 401', async () => {
    const c = await create(['--scopes', 'tasks:read']);
    expect((await call(gw.url, 'GET', '/v1/tasks', { token: c.token })).status).toBe(200);
    const r = await admin(['credential', 'revoke', '--id', c.id]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const after = await call(gw.url, 'GET', '/v1/tasks', { token: c.token });
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('UNAUTHENTICATED');
    // Other credentials of the namespace are untouched.
    expect((await call(gw.url, 'GET', '/v1/tasks', { token: base.token })).status).toBe(200);
    // Revoking twice is an error (one line, exit 1).
    const again = await admin(['credential', 'revoke', '--id', c.id]);
    expect(again.code).toBe(1);
    expect(lines(again.stderr)).toHaveLength(1);
  });
});

describe('orbit-admin quota set', () => {
  it('caps unfinished tasks: submits beyond the quota get 429 QUOTA_EXCEEDED', async () => {
    const { creds } = await bootstrapFile([], { app: 'quota-app', queues: ['q'] });
    const r = await admin(['quota', 'set', '--application-id', creds.application_id, '--max-unfinished-tasks', '2']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [rows] = await db.pool.query('SELECT max_unfinished_tasks, max_active_attempts FROM applications WHERE id = ?', [creds.application_id]);
    expect(Number((rows as { max_unfinished_tasks: number }[])[0]!.max_unfinished_tasks)).toBe(2);
    expect(Number((rows as { max_active_attempts: number }[])[0]!.max_active_attempts)).toBe(10000); // untouched
    const keys = [ikey(), ikey()];
    for (const key of keys) expect((await call(gw.url, 'POST', '/v1/tasks', { token: creds.token, key, body: task(creds.queue_id) })).status).toBe(201);
    const over = await call(gw.url, 'POST', '/v1/tasks', { token: creds.token, key: ikey(), body: task(creds.queue_id) });
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe('QUOTA_EXCEEDED');
    // A replay of an accepted command still returns its receipt.
    const replay = await call(gw.url, 'POST', '/v1/tasks', { token: creds.token, key: keys[0], body: task(creds.queue_id) });
    expect(replay.status).toBe(200);
    // Raising the quota lets new submits in again.
    const up = await admin(['quota', 'set', '--application-id', creds.application_id, '--max-unfinished-tasks', '3']);
    expect(up.code).toBe(0);
    expect((await call(gw.url, 'POST', '/v1/tasks', { token: creds.token, key: ikey(), body: task(creds.queue_id) })).status).toBe(201);
    expect((await call(gw.url, 'POST', '/v1/tasks', { token: creds.token, key: ikey(), body: task(creds.queue_id) })).status).toBe(429);
  });

  it('sets max-active-attempts', async () => {
    const { creds } = await bootstrapFile([], { app: 'quota-app-2', queues: ['q'] });
    const r = await admin(['quota', 'set', '--application-id', creds.application_id, '--max-active-attempts', '7']);
    expect(r.code).toBe(0);
    const [rows] = await db.pool.query('SELECT max_unfinished_tasks, max_active_attempts FROM applications WHERE id = ?', [creds.application_id]);
    expect(Number((rows as { max_active_attempts: number }[])[0]!.max_active_attempts)).toBe(7);
    expect(Number((rows as { max_unfinished_tasks: number }[])[0]!.max_unfinished_tasks)).toBe(1000000);
  });
});

describe('orbit-admin bad arguments', () => {
  let base: CredentialsFile;
  let otherNsQueue: string;
  let notADir: string;
  beforeAll(async () => {
    base = (await bootstrapFile([], { app: 'bad-app', queues: ['alpha'] })).creds;
    otherNsQueue = (await bootstrapFile([], { app: 'bad-app', ns: 'other', queues: ['alpha'] })).creds.queue_id;
    notADir = path.join(dir, 'plain-file');
    fs.writeFileSync(notADir, 'x');
  });

  const out = () => path.join(dir, 'bad-output.json');
  const boot = (...extra: string[]) => ['bootstrap', '--application', 'bad-new-app', '--namespace', 'n', '--environment', 'test', ...extra];

  const cases: [string, () => string[], Record<string, string | undefined>?][] = [
    ['no arguments', () => []],
    ['unknown command', () => ['frobnicate']],
    ['unknown credential subcommand', () => ['credential', 'rotate', '--id', base.namespace_id]],
    ['bootstrap without --output', () => boot('--queue', 'a')],
    ['bootstrap without --queue', () => boot('--output', out())],
    ['bootstrap without --application', () => ['bootstrap', '--namespace', 'n', '--environment', 'test', '--queue', 'a', '--output', out()]],
    ['bootstrap with a bad queue name', () => boot('--queue', 'Bad Name', '--output', out())],
    [
      'bootstrap with a bad environment',
      () => ['bootstrap', '--application', 'x', '--namespace', 'n', '--environment', 'no spaces', '--queue', 'a', '--output', out()],
    ],
    ['bootstrap with an unknown flag', () => boot('--queue', 'a', '--wroker-access', '--output', out())],
    ['bootstrap with a stray positional argument', () => boot('--queue', 'a', 'extra', '--output', out())],
    ['bootstrap with --output in a path that cannot be written', () => boot('--queue', 'a', '--output', path.join(notADir, 'creds.json'))],
    ['bootstrap with --output naming a directory', () => boot('--queue', 'a', '--output', dir)],
    [
      'bootstrap reusing a namespace with another environment',
      () => ['bootstrap', '--application', 'bad-app', '--namespace', 'main', '--environment', 'prod', '--queue', 'alpha', '--output', out()],
    ],
    ['bootstrap with --application twice', () => [...boot('--queue', 'a', '--output', out()), '--application', 'y']],
    ['bootstrap without ORBIT_MYSQL_DSN', () => boot('--queue', 'a', '--output', out()), { ORBIT_MYSQL_DSN: undefined }],
    ['bootstrap with a garbage ORBIT_MYSQL_DSN', () => boot('--queue', 'a', '--output', out()), { ORBIT_MYSQL_DSN: 'not a dsn' }],
    ['bootstrap against a closed port', () => boot('--queue', 'a', '--output', out()), { ORBIT_MYSQL_DSN: 'mysql://orbit:x@127.0.0.1:1/db' }],
    ['credential create with an unknown scope', () => ['credential', 'create', '--namespace-id', base.namespace_id, '--scopes', 'tasks:read tasks:delete']],
    ['credential create with no scopes', () => ['credential', 'create', '--namespace-id', base.namespace_id, '--scopes', ' ']],
    ['credential create without --scopes', () => ['credential', 'create', '--namespace-id', base.namespace_id]],
    ['credential create for an unknown namespace', () => ['credential', 'create', '--namespace-id', '0'.repeat(32), '--scopes', 'tasks:read']],
    [
      'credential create with a malformed queue id',
      () => ['credential', 'create', '--namespace-id', base.namespace_id, '--scopes', 'tasks:read', '--queue-ids', 'abc'],
    ],
    [
      'credential create with a queue of another namespace',
      () => ['credential', 'create', '--namespace-id', base.namespace_id, '--scopes', 'tasks:read', '--queue-ids', otherNsQueue],
    ],
    [
      'credential create with an unknown queue',
      () => ['credential', 'create', '--namespace-id', base.namespace_id, '--scopes', 'tasks:read', '--queue-ids', 'f'.repeat(32)],
    ],
    ['credential revoke of an unknown id', () => ['credential', 'revoke', '--id', 'e'.repeat(32)]],
    ['credential revoke without --id', () => ['credential', 'revoke']],
    ['quota set with no limit', () => ['quota', 'set', '--application-id', base.application_id]],
    ['quota set with a negative limit', () => ['quota', 'set', '--application-id', base.application_id, '--max-unfinished-tasks', '-1']],
    ['quota set with a non-numeric limit', () => ['quota', 'set', '--application-id', base.application_id, '--max-active-attempts', '12abc']],
    ['quota set with a limit too large', () => ['quota', 'set', '--application-id', base.application_id, '--max-active-attempts', '99999999999']],
    ['quota set for an unknown application', () => ['quota', 'set', '--application-id', 'd'.repeat(32), '--max-unfinished-tasks', '5']],
  ];

  // Every case in-process; these few also through the real process.
  const AS_PROCESS = new Set([
    'no arguments',
    'bootstrap with --output in a path that cannot be written',
    'bootstrap against a closed port',
    'credential create for an unknown namespace',
  ]);
  const runs = [
    ...cases.map((c) => ({ label: c[0], c, run: admin })),
    ...cases.filter((c) => AS_PROCESS.has(c[0])).map((c) => ({ label: `${c[0]} (the bin, a real process)`, c, run: adminProcess })),
  ];
  it('names only known cases to run as a process', () => {
    expect(runs.filter((r) => r.run === adminProcess)).toHaveLength(AS_PROCESS.size);
  });

  for (const {
    label,
    c: [, args, env],
    run,
  } of runs) {
    it(`${label}: exit 1, one line on stderr, nothing written`, async () => {
      const before = await counts();
      const r = await run(args(), env ?? {});
      onTestFinished(() => fs.rmSync(out(), { force: true }));
      expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 1, stdout: '' });
      const errLines = lines(r.stderr);
      expect(errLines, r.stderr).toHaveLength(1);
      expect(errLines[0]!.length).toBeGreaterThan(10);
      expect(fs.existsSync(out())).toBe(false);
      expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
      expect(await counts()).toEqual(before);
    });
  }

  for (const [how, run] of [
    ['in-process', admin],
    ['the bin, a real process', adminProcess],
  ] as const) {
    it(`--help prints the usage on stdout and exits 0 (${how})`, async () => {
      const r = await run(['--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('orbit-admin bootstrap');
      expect(r.stderr).toBe('');
    });
  }
});
