// The documentation's relative links lead somewhere: every link of README.md and docs/*.md that is
// not a URL names a file or folder of the repository, and a `#fragment` names a heading of the
// Markdown file it points to (GitHub's anchor for it). Pure file reads, no database.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../server/paths.js';

const root = packageRoot();

const pages = [
  'README.md',
  ...fs
    .readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join('docs', f)),
];

/** The text outside fenced code blocks and inline code, where a `](` is not a link. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Targets of `[text](target)` and `![alt](target)` links, titles dropped. */
function linkTargets(text: string): string[] {
  return [...prose(text).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens, and -1, -2 …
 * for repeats. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function isExternal(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target);
}

describe('documentation links', () => {
  it('finds the pages and their links', () => {
    expect(pages).toContain(path.join('docs', 'guarantees.md'));
    expect(linkTargets(fs.readFileSync(path.join(root, 'README.md'), 'utf8')).length).toBeGreaterThan(10);
  });

  it.each(pages)('every relative link of %s resolves', (page) => {
    const text = fs.readFileSync(path.join(root, page), 'utf8');
    const broken: string[] = [];
    for (const target of linkTargets(text)) {
      if (isExternal(target)) continue;
      const [file, fragment] = target.split('#', 2) as [string, string | undefined];
      const resolved = file === '' ? path.join(root, page) : path.resolve(path.dirname(path.join(root, page)), decodeURIComponent(file));
      if (!resolved.startsWith(root + path.sep) || !fs.existsSync(resolved)) {
        broken.push(`${target}: no such file`);
        continue;
      }
      if (fragment !== undefined && resolved.endsWith('.md') && !anchors(fs.readFileSync(resolved, 'utf8')).has(fragment)) {
        broken.push(`${target}: no heading with that anchor`);
      }
    }
    expect(broken).toEqual([]);
  });
});
