// docs/errors.md must list every code of protocol/errors.ts with the same HTTP status, WebSocket
// close code and retry class, and no code that does not exist.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, STEP_ERROR_CODES, type ErrorCode } from '../protocol/errors.js';
import { packageRoot } from '../server/paths.js';

interface DocRow {
  code: string;
  http: number;
  close: number | null;
  retryable: boolean;
  meaning: string;
}

function docRows(): DocRow[] {
  const text = fs.readFileSync(path.join(packageRoot(), 'docs/errors.md'), 'utf8');
  const rows: DocRow[] = [];
  for (const line of text.split('\n')) {
    // | `CODE` | 400 | 1002 or — | yes/no | meaning |
    const m = /^\|\s*`([A-Z_]+)`\s*\|\s*(\d{3})\s*\|\s*([^|]*?)\s*\|\s*(yes|no)\s*\|\s*(.*?)\s*\|\s*$/.exec(line);
    if (!m) continue;
    const close = m[3]!.trim();
    rows.push({
      code: m[1]!,
      http: Number(m[2]),
      close: close === '—' || close === '-' || close === '' ? null : Number(close),
      retryable: m[4] === 'yes',
      meaning: m[5]!,
    });
  }
  return rows;
}

/** The rows of the workflow step table: | `CODE` | meaning | (two columns). */
function stepRows(): { code: string; meaning: string }[] {
  const text = fs.readFileSync(path.join(packageRoot(), 'docs/errors.md'), 'utf8');
  const section = text.split('## Workflow step error codes')[1]?.split('\n## ')[0] ?? '';
  return [...section.matchAll(/^\|\s*`([A-Z_]+)`\s*\|\s*([^|]*?)\s*\|\s*$/gm)].map((m) => ({ code: m[1]!, meaning: m[2]! }));
}

describe('docs/errors.md: workflow step error codes', () => {
  it('lists exactly the codes of STEP_ERROR_CODES, each once, with a meaning', () => {
    const rows = stepRows();
    expect(rows.map((r) => r.code).sort()).toEqual(Object.keys(STEP_ERROR_CODES).sort());
    for (const r of rows) expect(r.meaning.length, r.code).toBeGreaterThan(20);
  });
});

describe('docs/errors.md', () => {
  const rows = docRows();
  const byCode = new Map(rows.map((r) => [r.code, r]));

  it('has one table row per code', () => {
    expect(rows.length).toBeGreaterThan(0);
    expect(new Set(rows.map((r) => r.code)).size).toBe(rows.length);
  });

  it('lists every code in protocol/errors.ts', () => {
    const missing = Object.keys(ERROR_CODES).filter((c) => !byCode.has(c));
    expect(missing, `missing from docs/errors.md: ${missing.join(', ')}`).toEqual([]);
  });

  it('lists no code that protocol/errors.ts does not define', () => {
    const extra = rows.map((r) => r.code).filter((c) => !Object.prototype.hasOwnProperty.call(ERROR_CODES, c));
    expect(extra).toEqual([]);
  });

  for (const [code, def] of Object.entries(ERROR_CODES) as [ErrorCode, (typeof ERROR_CODES)[ErrorCode]][]) {
    it(`${code}: HTTP ${def.http}, close ${def.close ?? '—'}, ${def.retryable ? 'retryable' : 'not retryable'}, with a meaning`, () => {
      const row = byCode.get(code);
      expect(row, `${code} missing from docs/errors.md`).toBeDefined();
      expect({ http: row!.http, close: row!.close, retryable: row!.retryable }).toEqual({ http: def.http, close: def.close, retryable: def.retryable });
      expect(row!.meaning.length).toBeGreaterThan(20);
    });
  }
});
