// The documentation holds together: every relative link of README.md and docs/**/*.md names a file
// or folder of the repository, and a `#fragment` names a heading of the Markdown file it points to
// (GitHub's anchor for it); every comment of the code that cites `docs/<page>.md "<Section>"` names
// a heading of that page; the pages stay within their line bounds; and no tracked file outside
// migrations/ names the sibling folder `shared` by its relative path. Pure file reads (and `git ls-files`), no database.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../server/paths.js';

const root = packageRoot();

/** Markdown files under `dir` (relative to the root), subfolders included. */
function markdownUnder(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return markdownUnder(rel);
    return e.isFile() && e.name.endsWith('.md') ? [rel] : [];
  });
}

const pages = ['README.md', 'worker-sdk/README.md', 'worker-sdk-go/README.md', ...markdownUnder('docs')].filter((p) => fs.existsSync(path.join(root, p)));

/** Most lines a page may have: the front page, the benchmark report and the design stay readable. */
const LINE_BOUNDS: Record<string, number> = {
  'README.md': 250,
  [path.join('docs', 'benchmarks.md')]: 300,
  [path.join('docs', 'design.md')]: 700,
};

const FENCED = /^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm;

/** The text outside fenced code blocks and inline code, where a `](` is not a link. */
function prose(text: string): string {
  return text.replace(FENCED, '').replace(/`[^`\n]*`/g, '');
}

/** Targets of `[text](target)` and `![alt](target)` links, titles dropped. */
function linkTargets(text: string): string[] {
  return [...prose(text).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
}

/** The headings of a Markdown text, outside fenced code blocks. */
function headings(markdown: string): string[] {
  return [...markdown.replace(FENCED, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)].map((m) => m[1]!);
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens, and -1, -2 …
 * for repeats. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const h of headings(markdown)) {
    const base = h
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

/** Lines as `wc -l` counts them. */
function lineCount(text: string): number {
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** The repository's tracked files; without git (an exported tree), every file but the generated
 * and installed folders. */
function trackedFiles(): string[] {
  try {
    return execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
      .split('\0')
      .filter((f) => f !== '');
  } catch {
    const skip = new Set(['.git', 'node_modules', 'dist', '.orbit']);
    const walk = (dir: string): string[] =>
      fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
        const rel = dir === '' ? e.name : path.join(dir, e.name);
        if (e.isDirectory()) return skip.has(e.name) ? [] : walk(rel);
        return e.isFile() ? [rel] : [];
      });
    return walk('');
  }
}

/** Comments' citations `docs/<page>.md "<Section>"` (also `docs/<page>.md, "<A>", "<B>"` and a
 * section name broken over two comment lines), with the file and line they are on. */
function citations(text: string): { page: string; section: string; line: number }[] {
  const out: { page: string; section: string; line: number }[] = [];
  const re = /(docs\/[A-Za-z0-9_/.-]+?\.md)((?:(?:[,;:(\s]|\/\/|\*|#)*"[^"\n]*(?:\n\s*(?:\/\/|\*|#)?\s*[^"\n]*)?")+)/g;
  for (const m of text.matchAll(re)) {
    const line = text.slice(0, m.index).split('\n').length;
    for (const q of m[2]!.matchAll(/"([^"]*)"/g)) {
      out.push({ page: m[1]!, section: q[1]!.replace(/\n\s*(?:\/\/|\*|#)?\s*/g, ' '), line });
    }
  }
  return out;
}

const normalize = (s: string) => s.replace(/`/g, '').replace(/\s+/g, ' ').trim().toLowerCase();

describe('documentation links', () => {
  it('finds the pages and their links', () => {
    expect(pages).toContain(path.join('docs', 'guarantees.md'));
    expect(pages).toContain(path.join('docs', 'decisions', '0001-one-grant-path.md'));
    expect(linkTargets(fs.readFileSync(path.join(root, 'README.md'), 'utf8')).length).toBeGreaterThan(10);
  });

  it.each(pages)('every relative link of %s resolves', (page) => {
    const text = fs.readFileSync(path.join(root, page), 'utf8');
    const broken: string[] = [];
    for (const target of linkTargets(text)) {
      if (isExternal(target)) continue;
      const [file, fragment] = target.split('#', 2) as [string, string | undefined];
      const resolved = file === '' ? path.join(root, page) : path.resolve(path.dirname(path.join(root, page)), decodeURIComponent(file));
      if (!(resolved === root || resolved.startsWith(root + path.sep)) || !fs.existsSync(resolved)) {
        broken.push(`${target}: no such file`);
        continue;
      }
      if (fragment !== undefined && resolved.endsWith('.md') && !anchors(fs.readFileSync(resolved, 'utf8')).has(fragment)) {
        broken.push(`${target}: no heading with that anchor`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('finds a broken link and a broken anchor (the check itself works)', () => {
    expect(linkTargets('see [x](docs/nope.md) and `[y](inline.md)`\n```\n[z](fenced.md)\n```\n')).toEqual(['docs/nope.md']);
    expect(
      anchors('# Guarantees\n## What happens to my task if the worker dies mid-run\n## The fencing token (`concurrency_token`)\n## Worker → gateway frames\n'),
    ).toEqual(new Set(['guarantees', 'what-happens-to-my-task-if-the-worker-dies-mid-run', 'the-fencing-token-concurrency_token', 'worker--gateway-frames']));
  });
});

describe('documentation bounds', () => {
  it.each(Object.entries(LINE_BOUNDS))('%s has at most %i lines', (page, bound) => {
    expect(lineCount(fs.readFileSync(path.join(root, page), 'utf8'))).toBeLessThanOrEqual(bound);
  });

  // Built, not written out, so that this file does not name it either.
  const SHARED = ['..', 'shared'].join('/');

  it('no tracked file outside migrations/ names the relative path of the sibling folder shared', () => {
    const files = trackedFiles();
    expect(files.length).toBeGreaterThan(100);
    const naming = files.filter(
      (f) => !f.startsWith('migrations/') && fs.existsSync(path.join(root, f)) && fs.readFileSync(path.join(root, f)).includes(SHARED),
    );
    expect(naming).toEqual([]);
  });
});

describe('citations of docs/ in the code', () => {
  const sources = trackedFiles().filter((f) => /^(server|protocol|worker-sdk|worker-sdk-go|test|bench|examples)\//.test(f) && /\.(ts|js|go|sql)$/.test(f));

  it('every `docs/<page>.md "<Section>"` names a page and one of its headings', () => {
    const bad: string[] = [];
    let seen = 0;
    for (const file of sources) {
      if (file === path.join('test', 'docs-links.test.ts') || !fs.existsSync(path.join(root, file))) continue;
      for (const c of citations(fs.readFileSync(path.join(root, file), 'utf8'))) {
        seen++;
        const target = path.join(root, c.page);
        if (!fs.existsSync(target)) {
          bad.push(`${file}:${c.line}: ${c.page} does not exist`);
          continue;
        }
        const names = new Set(headings(fs.readFileSync(target, 'utf8')).map(normalize));
        if (!names.has(normalize(c.section))) bad.push(`${file}:${c.line}: ${c.page} has no heading "${c.section}"`);
      }
    }
    expect(seen).toBeGreaterThan(20);
    expect(bad).toEqual([]);
  });

  it('reads a citation broken over two comment lines, and a list of sections', () => {
    expect(citations('// see (docs/worker-protocol.md, "What an SDK\n// must do") and docs/workflows.md "Runs", "Endpoints"')).toEqual([
      { page: 'docs/worker-protocol.md', section: 'What an SDK must do', line: 1 },
      { page: 'docs/workflows.md', section: 'Runs', line: 2 },
      { page: 'docs/workflows.md', section: 'Endpoints', line: 2 },
    ]);
  });
});
