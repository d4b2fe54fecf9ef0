// Builds the console from this repository's sources: nothing is fetched at run time. Fails when
// the console is over its gzipped budget.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { build } from 'esbuild';
import { packageRoot } from '../paths.js';
import { CONSOLE_FILES, consoleDir } from './serve.js';

export const CONSOLE_BUDGET_GZIP_BYTES = 200 * 1024;

export async function buildConsole(): Promise<{ file: string; bytes: number; gzip: number }[]> {
  const root = packageRoot();
  const src = path.join(root, 'server/console/app');
  const out = consoleDir();
  fs.mkdirSync(out, { recursive: true });
  await build({
    entryPoints: [path.join(src, 'main.tsx')],
    outfile: path.join(out, 'app.js'),
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    logLevel: 'warning',
  });
  for (const f of ['index.html', 'app.css', 'favicon.svg']) fs.copyFileSync(path.join(src, f), path.join(out, f));
  return Object.keys(CONSOLE_FILES).map((file) => {
    const buf = fs.readFileSync(path.join(out, file));
    return { file, bytes: buf.length, gzip: zlib.gzipSync(buf, { level: 9 }).length };
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const sizes = await buildConsole();
  const total = sizes.reduce((n, s) => n + s.gzip, 0);
  for (const s of sizes) console.log(`console: ${s.file} ${s.bytes} B (${s.gzip} B gzipped)`);
  console.log(`console: total ${(total / 1024).toFixed(1)} KiB gzipped (budget ${CONSOLE_BUDGET_GZIP_BYTES / 1024} KiB)`);
  if (total > CONSOLE_BUDGET_GZIP_BYTES) {
    console.error('console: over the size budget');
    process.exit(1);
  }
}
