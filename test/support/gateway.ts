// Real gateway processes (node dist/server/cli/orbit.js, or another entry of the same ready line:
// the fault gateway, test/support/faults.ts) for integration tests.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { packageRoot } from '../../server/paths.js';

export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  /** Lines the process wrote (stdout and stderr), for assertions and debugging. */
  output: string[];
  /** SIGTERM and wait for exit; returns the exit code. */
  stop(): Promise<number | null>;
  /** kill -9 and wait for exit. */
  kill9(): Promise<void>;
}

const ORBIT_ENTRY = 'dist/server/cli/orbit.js';
const running = new Set<GatewayProcess>();
/** Every gateway process this file spawned, stopped or not (for the end-of-file check). */
const spawned = new Set<ChildProcess>();

/** `script`: the entry to run, relative to the package root; another than orbit.js gets an IPC
 * channel (the fault gateway takes its commands there). */
export async function startGateway(dsn: string, env: Record<string, string> = {}, port = 0, script = ORBIT_ENTRY): Promise<GatewayProcess> {
  const bin = path.join(packageRoot(), script);
  const child = spawn(process.execPath, [bin], {
    env: { ...process.env, ORBIT_MYSQL_DSN: dsn, ORBIT_HTTP_ADDR: `127.0.0.1:${port}`, ORBIT_LOG_LEVEL: 'warn', ...env },
    stdio: script === ORBIT_ENTRY ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  spawned.add(child);
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start:\n${output.join('\n')}`)), 20_000);
    const onLine = (line: string) => {
      output.push(line);
      if (line.includes('orbit gateway ready')) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { url: string }).url);
      }
    };
    readline.createInterface({ input: child.stdout! }).on('line', onLine);
    readline.createInterface({ input: child.stderr! }).on('line', (l) => output.push(l));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code}:\n${output.join('\n')}`));
    });
  });
  const gp: GatewayProcess = {
    url,
    child,
    output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const code = await exited;
      running.delete(gp);
      return code;
    },
    async kill9() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      running.delete(gp);
    },
  };
  running.add(gp);
  return gp;
}

/** Stops every gateway this file started (call from afterAll). */
export async function stopAllGateways(): Promise<void> {
  await Promise.all([...running].map((g) => g.kill9()));
}

/** End-of-file check (after stopAllGateways): fails if a gateway process this file spawned is still
 * running; kills it first so the run continues cleanly. */
export async function assertNoGatewaysRunning(): Promise<void> {
  const alive = [...spawned].filter((c) => c.exitCode === null && c.signalCode === null);
  await Promise.all(alive.map((c) => new Promise<void>((resolve) => (c.once('exit', () => resolve()), c.kill('SIGKILL')))));
  if (alive.length > 0)
    throw new Error(`${alive.length} gateway process(es) still running at the end of the file (pids ${alive.map((c) => c.pid).join(', ')})`);
}
