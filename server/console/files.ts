// Where the built console lives and what it consists of; shared by the build (build.ts, which
// needs esbuild, a dev dependency) and the gateway (serve.ts, which must not load esbuild).
import path from 'node:path';
import { packageRoot } from '../paths.js';

export const CONSOLE_BUDGET_GZIP_BYTES = 200 * 1024;
export const CONSOLE_FILES = ['index.html', 'app.js', 'app.css', 'favicon.svg'] as const;

export function consoleDir(): string {
  return path.join(packageRoot(), 'dist/console');
}
