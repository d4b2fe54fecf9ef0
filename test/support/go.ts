// Running the Go SDK's toolchain from the tests (worker-sdk-go/): `go vet`, `go test`, `go build`
// of its test binaries, with the environment its gateway tests read and the output captured for a
// failure message.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { packageRoot } from '../../server/paths.js';

export const GO_MODULE_DIR = path.join(packageRoot(), 'worker-sdk-go');

export interface GoRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  ms: number;
}

/** A mysql://user:pass@host:port/db DSN in go-sql-driver's form: user:pass@tcp(host:port)/db. */
export function goMysqlDsn(dsn: string): string {
  const u = new URL(dsn);
  const db = decodeURIComponent(u.pathname.replace(/^\//, ''));
  return `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}@tcp(${u.hostname}:${u.port || 3306})/${db}`;
}

const SYSTEM_CERTS = '/etc/ssl/certs/ca-certificates.crt';

/** The environment's extra CA certificates for Node (NODE_EXTRA_CA_CERTS: a TLS-intercepting proxy
 * between this machine and the Go module proxy, say) trusted by the go command too: Go reads only
 * SSL_CERT_FILE, which replaces the system bundle, so it gets the system bundle plus the extra
 * ones, written once. Nothing when SSL_CERT_FILE is set or no extra file is named. */
function goCertEnv(): Record<string, string> {
  const extra = process.env.NODE_EXTRA_CA_CERTS;
  if (process.env.SSL_CERT_FILE || !extra || !fs.existsSync(extra)) return {};
  const bundle = path.join(os.tmpdir(), `orbit-go-certs-${process.getuid?.() ?? 0}.crt`);
  if (!fs.existsSync(bundle)) {
    const system = fs.existsSync(SYSTEM_CERTS) ? fs.readFileSync(SYSTEM_CERTS, 'utf8') : '';
    fs.writeFileSync(`${bundle}.${process.pid}.tmp`, `${system}\n${fs.readFileSync(extra, 'utf8')}`);
    fs.renameSync(`${bundle}.${process.pid}.tmp`, bundle);
  }
  return { SSL_CERT_FILE: bundle };
}

/** Runs `go args…` in worker-sdk-go/ (or `cwd`), killing it after `timeoutMs`; stdout and stderr
 * interleaved in `output`. */
export function runGo(args: string[], opts: { env?: Record<string, string>; timeoutMs: number; cwd?: string }): Promise<GoRun> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn('go', args, {
      cwd: opts.cwd ?? GO_MODULE_DIR,
      env: { ...process.env, ...goCertEnv(), ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')));
    const timer = setTimeout(() => {
      output += `\n[killed after ${opts.timeoutMs} ms]\n`;
      child.kill('SIGKILL');
    }, opts.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot run go (${err.message}): Go 1.26 must be on PATH (the machine image has it)`));
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output, ms: Date.now() - started });
    });
  });
}

/** Builds one main package of the module (e.g. ./internal/cmd/chaosworker) to `out`; throws with
 * the compiler's output on failure. */
export async function goBuild(pkg: string, out: string): Promise<void> {
  const r = await runGo(['build', '-o', out, pkg], { timeoutMs: 180_000 });
  if (r.code !== 0) throw new Error(`go build ${pkg} failed (${r.code ?? r.signal}):\n${r.output}`);
}
