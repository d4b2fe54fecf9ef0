import { fileURLToPath } from 'node:url';
import path from 'node:path';
import fs from 'node:fs';

/** The folder holding package.json, whether this runs from source (vitest) or from dist/. */
export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'migrations'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot locate the orbit package root');
    dir = parent;
  }
}
