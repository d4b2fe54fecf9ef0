// Builds the console from this repository's sources: nothing is fetched at run time. Fails when
// the console is over its gzipped budget.
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { packageRoot } from '../paths.js';
import { CONSOLE_FILES, consoleDir, gzipped } from './serve.js';

export const CONSOLE_BUDGET_GZIP_BYTES = 200 * 1024;

// Run by `npm run build`; the test of the budget imports the constant without building.
if (import.meta.url === `file://${process.argv[1]}`) {
  const src = path.join(packageRoot(), 'server/console/app');
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
  let total = 0;
  for (const file of Object.keys(CONSOLE_FILES)) {
    const { body, gzip } = gzipped(fs.readFileSync(path.join(out, file)));
    total += gzip.length;
    console.log(`console: ${file} ${body.length} B (${gzip.length} B gzipped)`);
  }
  console.log(`console: total ${(total / 1024).toFixed(1)} KiB gzipped (budget ${CONSOLE_BUDGET_GZIP_BYTES / 1024} KiB)`);
  if (total > CONSOLE_BUDGET_GZIP_BYTES) {
    console.error('console: over the size budget');
    process.exit(1);
  }
}
