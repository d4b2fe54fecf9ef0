// Runs the built package bins (node dist/server/cli/<name>.js) as real child processes, or a
// CLI's main() in-process with the same inputs and the same result shape (no process start: the
// bulk of the CLI cases; a few per binary still go through the real process).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../../server/paths.js';
import type { CliMain } from '../../server/cli/args.js';
import type { CredentialsFile } from '../../server/admin/bootstrap.js';

export interface BinResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export function binPath(name: string): string {
  return path.join(packageRoot(), 'dist/server/cli', `${name}.js`);
}

/** Environment for a child: the parent's, minus every ORBIT_* variable, plus `env`. */
export function childEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ORBIT_')) out[k] = v;
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

/** Runs a bin to completion (killed after `timeoutMs`). */
export function runBin(name: string, args: string[], env: Record<string, string | undefined> = {}, timeoutMs = 30_000): Promise<BinResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath(name), ...args], { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Calls a CLI's main() in-process as runBin would run its bin: the same environment (childEnv),
 * stdout and stderr collected, the exit code main resolves with. */
export async function runMain(main: CliMain, args: string[], env: Record<string, string | undefined> = {}): Promise<BinResult> {
  let stdout = '';
  let stderr = '';
  const io = { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } };
  const code = await main(args, childEnv(env), io);
  return { code, signal: null, stdout, stderr };
}

/** The non-empty lines of a stream. */
export function lines(s: string): string[] {
  return s.split('\n').filter((l) => l.trim() !== '');
}

/** A credentials file a CLI wrote (orbit-admin --output, npm start's dev.credentials.json). */
export function readCredentialsFile(file: string): CredentialsFile {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as CredentialsFile;
}
