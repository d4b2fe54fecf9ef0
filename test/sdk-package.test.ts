// The SDK as a user installs it: both workspace packages packed with `npm pack`, installed from the
// tarballs into a fresh project outside the repository, a worker written against the public
// exports type-checked with moduleResolution NodeNext (typed handler map included), compiled, and
// run as its own process against a real gateway until its task is SUCCEEDED.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../server/paths.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { waitFor } from './support/wait.js';

const f = useGatewayFixture();
const root = packageRoot();
let dir: string;
let tarballs: string[] = [];

function run(cmd: string, args: string[], cwd: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' } });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

const WORKER = `import { createWorker, RetryableError, isOrbitSdkError, type TaskContext } from '@orbit/worker-sdk/worker';
import { createClient, OrbitApiError } from '@orbit/worker-sdk/client';
import { ERROR_CODES } from '@orbit/protocol/errors';

interface Tasks {
  'object.update': { payload: { object_ref: string }; output: { updated: string } };
}

const env = process.env as Record<string, string>;
const worker = createWorker<Tasks>({
  url: env.ORBIT_URL, token: env.ORBIT_TOKEN, queues: [env.ORBIT_QUEUE], capacity: 2,
  handlers: {
    'object.update': async (e) => {
      const ref: string = e.task.payload.object_ref;
      setTimeout(() => void worker.close(), 50);
      return { updated: ref };
    },
  },
});

// The handler map is typed per handler name: these must not compile (never called).
const bad = () => {
  // @ts-expect-error output of the wrong type
  createWorker<Tasks>({ url: '', token: '', queues: ['q'], capacity: 1, handlers: { 'object.update': async () => ({ updated: 42 }) } });
  // @ts-expect-error a declared handler is missing
  createWorker<Tasks>({ url: '', token: '', queues: ['q'], capacity: 1, handlers: {} });
  // @ts-expect-error no such payload field
  return (e: TaskContext<Tasks['object.update']['payload']>) => e.task.payload.nope;
};
// One way to start (createWorker) and one way to hear from a worker (typed events).
const badStart = () => {
  // @ts-expect-error createWorker starts the worker; there is no autoStart option
  createWorker({ url: '', token: '', queues: ['q'], capacity: 1, handlers: { h: () => 1 }, autoStart: false });
  // @ts-expect-error nor a start() method
  void worker.start();
  // @ts-expect-error events are typed by name
  worker.on('no-such-event', () => {});
};
worker.on('result', (r) => {
  const id: string = r.attemptId;
  void id;
});
worker.on('disconnected', (code: number, reason: string) => void [code, reason]);

const client = createClient({ url: env.ORBIT_URL, token: env.ORBIT_TOKEN });
const ok: boolean = isOrbitSdkError(new RetryableError('x'), 'RetryableError') && ERROR_CODES.NOT_FOUND.http === 404;
try {
  await client.getTask('0'.repeat(32));
} catch (err) {
  if (!(err instanceof OrbitApiError) || err.code !== 'NOT_FOUND') throw err;
}
await worker.run();
console.log(JSON.stringify({ done: true, ok, bad: typeof bad, badStart: typeof badStart }));
`;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-sdk-user-'));
  const packs = path.join(dir, 'packs');
  fs.mkdirSync(packs);
  const out = run('npm', ['pack', '--json', '--pack-destination', packs, '-w', 'protocol', '-w', 'worker-sdk'], root);
  const info = JSON.parse(out) as { filename: string; files: { path: string }[] }[];
  tarballs = info.map((i) => path.join(packs, i.filename));
  (globalThis as { packInfo?: unknown }).packInfo = info;
  const app = path.join(dir, 'app');
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'my-worker', private: true, type: 'module' }));
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs, '@types/node@^20'], app);
  fs.writeFileSync(
    path.join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        outDir: 'dist',
        skipLibCheck: false,
        types: ['node'],
      },
      include: ['worker.ts'],
    }),
  );
  fs.writeFileSync(path.join(app, 'worker.ts'), WORKER);
}, 240_000);

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('npm pack → install in another project → typed worker → SUCCEEDED', () => {
  it('each tarball holds only its package: compiled JS, declarations, README, package.json', () => {
    const info = (globalThis as { packInfo?: { name: string; files: { path: string }[] }[] }).packInfo!;
    expect(info.map((i) => i.name).sort()).toEqual(['@orbit/protocol', '@orbit/worker-sdk']);
    for (const p of info) {
      const files = p.files.map((x) => x.path);
      expect(files).toContain('README.md');
      expect(files).toContain('package.json');
      expect(files.filter((x) => !/^dist\/[a-z-]+\.(js|d\.ts)$/.test(x) && x !== 'README.md' && x !== 'package.json')).toEqual([]);
    }
  });

  it('installs without the server or mysql2 (an optional peer), and type-checks under NodeNext', () => {
    const app = path.join(dir, 'app');
    const nm = path.join(app, 'node_modules');
    expect(fs.existsSync(path.join(nm, '@orbit/worker-sdk/dist/worker-entry.js'))).toBe(true);
    expect(fs.existsSync(path.join(nm, 'mysql2'))).toBe(false);
    expect(fs.existsSync(path.join(nm, 'orbit'))).toBe(false);
    expect(fs.lstatSync(path.join(nm, '@orbit/protocol')).isSymbolicLink()).toBe(false); // a real install, not a link to the repo
    run(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], app);
    expect(fs.existsSync(path.join(app, 'dist/worker.js'))).toBe(true);
  });

  it('the installed declarations document a default for every optional option of the worker and of connect()', () => {
    const dts = (f: string) => fs.readFileSync(path.join(dir, 'app/node_modules/@orbit/worker-sdk/dist', f), 'utf8');
    const undocumented: string[] = [];
    for (const [file, iface] of [
      ['worker-options.d.ts', 'WorkerOptions'],
      ['reconnect.d.ts', 'ReconnectPolicy'],
      ['connect-options.d.ts', 'ConnectOptions'],
      ['connect-options.d.ts', 'Registration'],
    ] as const) {
      const body = dts(file).split(`export interface ${iface}`)[1]!.split('\n}')[0]!;
      // Each field with the JSDoc block just above it; an optional field's block must say @default.
      for (const m of body.matchAll(/(\/\*\*(?:(?!\*\/)[\s\S])*\*\/\s*)?(\w+)(\?)?:/g)) {
        if (m[3] && !m[1]?.includes('@default')) undocumented.push(`${iface}.${m[2]}`);
        if (!m[1]) undocumented.push(`${iface}.${m[2]} (no doc)`);
      }
    }
    expect(undocumented).toEqual([]);
  });

  it('the compiled worker runs its task to SUCCEEDED and exits 0 after close()', async () => {
    const app = path.join(dir, 'app');
    const sub = await call(f.gw.url, 'POST', '/v1/tasks', {
      token: f.t.token,
      key: ikey('pkg'),
      body: { queue_id: f.t.queue_id, handler: 'object.update', handler_version: 'v1', payload_version: 'v1', payload: { object_ref: 'objects/7' } },
    });
    expect(sub.status).toBe(201);
    const child = spawn(process.execPath, ['dist/worker.js'], {
      cwd: app,
      env: { PATH: process.env.PATH, ORBIT_URL: f.gw.url, ORBIT_TOKEN: f.t.token, ORBIT_QUEUE: f.t.queue_id },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    expect(code, out).toBe(0);
    expect(out).toContain('{"done":true,"ok":true,"bad":"function","badStart":"function"}');
    const task = await waitFor(
      'SUCCEEDED',
      async () => {
        const r = await call(f.gw.url, 'GET', `/v1/tasks/${sub.body.data.task.id}`, { token: f.t.token });
        return r.body.data.task.state === 'SUCCEEDED' ? r.body.data.task : null;
      },
      10_000,
    );
    expect(task.result).toMatchObject({ outcome: 'succeeded', output: { updated: 'objects/7' } });
  });
});
