// The Go SDK's tests (test/go-sdk.test.ts, example-go, chaos-go-workers) fetch its modules from the
// Go module proxy over TLS and build with the race detector, which needs cgo: the system's CA
// certificates and a C compiler, installed here once when missing (support/apt.ts).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { aptInstall } from './apt.js';

export function ensureGoPrereqs(log: (l: string) => void): void {
  const missing: string[] = [];
  if (!fs.existsSync('/etc/ssl/certs/ca-certificates.crt')) missing.push('ca-certificates');
  if (spawnSync('sh', ['-c', 'command -v gcc']).status !== 0) missing.push('gcc', 'libc6-dev');
  if (missing.length > 0) aptInstall(missing, "the Go SDK's tests need them", log);
}
