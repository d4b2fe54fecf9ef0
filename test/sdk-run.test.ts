// Workers that fail loudly: run() rejects on a fatal error and the example exits
// non-zero; a refused token or an unreachable URL ends the process within a bound, with one-line
// log records; the hello always carries the handler filter, so a task for a handler this worker
// lacks is never assigned to it; error classes are recognised across package copies.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../server/paths.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { submitTask } from './support/submit.js';
import { freePort } from '../server/mariadb/embedded-mariadb.js';
import { ConnectionClosedError, createWorker, GatewayError, RetryableError, UnknownOutcomeError, connect, isOrbitSdkError } from '../worker-sdk/index.js';
import { errorResult } from '../worker-sdk/handler-result.js';
import { ERROR_MESSAGE_MAX } from '../protocol/limits.js';
import { FakeGateway } from '../worker-sdk/testing.js';
import { waitFor } from './support/wait.js';
import { silent, tenantWorker } from './support/sdk-worker.js';

const f = useGatewayFixture();
const root = packageRoot();

function runNode(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 20_000,
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const t0 = Date.now();
  const child = spawn(process.execPath, args, { cwd: root, env: { PATH: process.env.PATH, HOME: os.tmpdir(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((r) => child.once('close', (code) => (clearTimeout(timer), r({ code, stdout, stderr, ms: Date.now() - t0 }))));
}

const example = path.join(root, 'dist/examples/worker/main.js');

describe('the README worker', () => {
  it('is examples/worker/main.ts, verbatim (a file that compiles and runs, not a sketch)', () => {
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const file = fs.readFileSync(path.join(root, 'examples/worker/main.ts'), 'utf8');
    expect(readme).toContain('```ts\n' + file + '```');
  });
});

describe('exit codes', () => {
  it('the README worker with a refused token exits 1 within seconds, one line saying why', async () => {
    const r = await runNode([example], {
      ORBIT_URL: f.gw.url,
      ORBIT_TOKEN: 'orb_not-a-real-token-at-all',
      ORBIT_QUEUE: f.t.queue_id,
      ORBIT_CREDENTIALS_FILE: '/nonexistent',
    });
    expect(r.code, r.stderr).toBe(1);
    expect(r.ms).toBeLessThan(10_000);
    expect(r.stderr).toMatch(/^worker: .*(unknown or revoked credential|UNAUTHENTICATED)/m);
    expect(r.stderr).not.toMatch(/^\s+at /m); // no stack trace
  });

  it('the README worker without a credentials file or settings exits 2 with one line, no stack', async () => {
    const r = await runNode([example], { ORBIT_CREDENTIALS_FILE: '/nonexistent/dev.credentials.json' });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('npm start');
  });

  it('a worker whose fatal error nobody awaits still exits non-zero', async () => {
    const script = `import { createWorker } from '@orbit/worker-sdk/worker';
      createWorker({ url: ${JSON.stringify(f.gw.url)}, token: 'orb_wrong-token-xxxxxxxx', queues: ['${f.t.queue_id}'], capacity: 1, handlers: { h: () => 1 } });`;
    const r = await runNode(['--input-type=module', '-e', script], {});
    expect(r.code, r.stderr).toBe(1);
    const records = r.stderr.trim().split('\n');
    expect(records).toHaveLength(1); // one record: "ERROR orbit worker: fatal error, stopping {…}"
    expect(records[0]).toMatch(/ERROR orbit worker: fatal error, stopping \{.*"code":"UNAUTHENTICATED"/);
  });
});

describe('bounded reconnect', () => {
  it('an unreachable URL: maxAttempts one-line warnings, then run() rejects with UNAVAILABLE', async () => {
    const port = await freePort(); // nothing listens there
    const lines: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => (lines.push(String(chunk)), true)) as typeof process.stderr.write;
    let err: unknown;
    try {
      const w = createWorker({
        url: `http://127.0.0.1:${port}`,
        token: 'x'.repeat(20),
        queues: ['q'],
        capacity: 1,
        handlers: { h: () => 1 },
        reconnect: { initialDelayMs: 5, maxDelayMs: 20, maxAttempts: 3 },
      });
      err = await w.run().then(
        () => null,
        (e) => e,
      );
    } finally {
      process.stderr.write = write;
    }
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('UNAVAILABLE');
    expect((err as Error).message).toMatch(/after 3 attempts: .*ECONNREFUSED/);
    const warns = lines.filter((l) => l.includes('connect failed, retrying'));
    expect(warns).toHaveLength(2);
    for (const l of lines) expect(l.endsWith('\n') && l.indexOf('\n') === l.length - 1).toBe(true); // one line per record
    expect(warns[0]).toMatch(
      /WARN orbit worker: connect failed, retrying \{.*"err":"[^"]*connect ECONNREFUSED 127\.0\.0\.1:\d+\)?","attempt":1,"max_attempts":3/,
    );
  });
});

describe('handler filter', () => {
  it('a task for a handler the worker lacks is never assigned to it; its own handler runs', async () => {
    const submit = async (handler: string) => (await submitTask(f.gw.url, f.t, { handler, payload: {} }, ikey('filter'))).id as string;
    const typo = await submit('object.updat3');
    const good = await submit('object.update');
    const ran: string[] = [];
    const w = tenantWorker(f, { 'object.update': (e) => void ran.push(e.task.id) });
    const get = async (id: string) => (await call(f.gw.url, 'GET', `/v1/tasks/${id}`, { token: f.t.token })).body.data.task;
    await waitFor('own task SUCCEEDED', async () => (await get(good)).state === 'SUCCEEDED', 10_000);
    await new Promise((r) => setTimeout(r, 300)); // a claim round after the worker went idle
    expect(await get(typo)).toMatchObject({ state: 'WAITING', attempts_made: 0 });
    expect(ran).toEqual([good]);
    await w.close();
    // The typo'd task is still there for a worker that has the handler.
    const w2 = tenantWorker(f, { 'object.updat3': () => 'ok' });
    await waitFor('typo task SUCCEEDED by its own worker', async () => (await get(typo)).state === 'SUCCEEDED', 10_000);
    await w2.close();
  });

  it('sends every handler with its versions in hello (bare functions: defaultVersions)', async () => {
    const gw = await FakeGateway.start();
    try {
      const w = createWorker({
        url: gw.url,
        token: 't'.repeat(20),
        queues: ['q'],
        capacity: 1,
        logger: silent,
        defaultVersions: ['v1', 'v2'],
        handlers: { a: () => 1, b: { versions: ['v9'], fn: () => 2 } },
      });
      const s = await gw.nextSession();
      expect(s.hello.handlers).toEqual([
        { handler: 'a', versions: ['v1', 'v2'] },
        { handler: 'b', versions: ['v9'] },
      ]);
      await w.close();
    } finally {
      await gw.close();
    }
  });
});

describe('errors', () => {
  it('ConnectionClosedError carries the close code', async () => {
    const gw = await FakeGateway.start();
    try {
      const conn = await connect({
        url: gw.url,
        token: 't'.repeat(20),
        registration: { workerId: 'w-close', queues: ['q'], capacity: 1, concurrencyKeys: false },
      });
      const s = await gw.nextSession();
      const pending = conn.start('a'.repeat(32));
      s.close(4000, 'bye');
      const err = await pending.then(
        () => null,
        (e) => e,
      );
      expect(err).toBeInstanceOf(ConnectionClosedError);
      expect(err).toMatchObject({ closeCode: 4000, code: 'CONNECTION_CLOSED', reason: 'bye' });
    } finally {
      await gw.close();
    }
  });

  it('error classes from another copy of the package are recognised (instanceof and outcome)', async () => {
    // The compiled package is a separate module instance from the sources this file imports.
    const other = (await import(path.join(root, 'worker-sdk/dist/errors.js'))) as typeof import('../worker-sdk/errors.js');
    expect(other.RetryableError).not.toBe(RetryableError);
    const foreign = new other.RetryableError('from another copy', { retryAfterMs: 5 });
    expect(foreign instanceof RetryableError).toBe(true);
    expect(isOrbitSdkError(foreign, 'RetryableError')).toBe(true);
    expect(new other.UnknownOutcomeError('x') instanceof RetryableError).toBe(false);
    expect(errorResult('a', foreign)).toMatchObject({ outcome: 'retry', retryAfterMs: 5 });
    expect(errorResult('a', new other.UnknownOutcomeError('maybe'))).toMatchObject({ outcome: 'unknown' });
    expect(new UnknownOutcomeError('x') instanceof other.UnknownOutcomeError).toBe(true);
    class MyRetry extends RetryableError {}
    expect(new RetryableError('plain') instanceof MyRetry).toBe(false); // subclasses keep the exact check
    expect(new MyRetry('mine') instanceof RetryableError).toBe(true);
  });

  it('a thrown message is sent as storable text: a lone surrogate becomes U+FFFD, a cut never splits a pair', () => {
    // The gateway refuses a frame whose error message has a lone surrogate (protocol/primitives.ts Text).
    expect(errorResult('a', new Error('half \ud83d and \udc00 alone'))).toMatchObject({ error: { message: 'half \ufffd and \ufffd alone' } });
    const long = errorResult('a', new Error('x'.repeat(ERROR_MESSAGE_MAX - 1) + '😀'));
    expect(long.error!.message).toBe('x'.repeat(ERROR_MESSAGE_MAX - 1));
    expect(long.error!.message.isWellFormed()).toBe(true);
    expect(errorResult('a', new RetryableError('\ud800'.repeat(3)))).toMatchObject({ outcome: 'retry', error: { message: '\ufffd'.repeat(3) } });
  });
});
