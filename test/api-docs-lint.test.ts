// The API documents pass the linters that renderers and code generators trust (docs/http-api.md
// "API documents"): Spectral's OpenAPI ruleset finds nothing at any severity, the AsyncAPI parser
// reports nothing, and every operation carries what a reader needs (summary, description, tag,
// scope). The text linted is the text the build writes; test/api-docs.test.ts checks that the
// gateway serves exactly that.
import { Document, Spectral, type ISpectralDiagnostic, type RulesetDefinition } from '@stoplight/spectral-core';
import { Json } from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';
import { Parser } from '@asyncapi/parser';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '@orbit/protocol/errors';
import { ALL_SCOPES } from '../server/admin/access.js';
import { apiDocumentText } from '../server/api-docs/serve.js';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const SEVERITY = ['error', 'warning', 'info', 'hint'];

const shown = (d: Pick<ISpectralDiagnostic, 'severity' | 'code' | 'path' | 'message'>) =>
  `${SEVERITY[d.severity] ?? d.severity} ${String(d.code)} at ${d.path.join('.') || '(root)'}: ${d.message}`;

async function spectral(ruleset: RulesetDefinition): Promise<string[]> {
  const s = new Spectral();
  s.setRuleset(ruleset);
  return (await s.run(new Document(apiDocumentText('openapi'), Json, 'openapi.json'))).map(shown);
}

interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  'x-orbit-scopes'?: string[];
  'x-orbit-error-codes'?: string[];
  responses: Record<string, unknown>;
}

const openapi = JSON.parse(apiDocumentText('openapi')) as {
  info: { description: string };
  tags?: { name: string; description?: string }[];
  components: { securitySchemes: Record<string, { description?: string }> };
  paths: Record<string, Record<string, Operation>>;
};
const operations = Object.entries(openapi.paths).flatMap(([p, item]) =>
  Object.entries(item)
    .filter(([m]) => METHODS.includes(m))
    .map(([m, op]) => ({ name: `${m.toUpperCase()} ${p}`, op })),
);

describe('OpenAPI document under Spectral', () => {
  it('has no diagnostic of any severity under the oas ruleset as shipped (spectral:oas)', async () => {
    expect(await spectral({ extends: [oas as RulesetDefinition] })).toEqual([]);
  });

  it('has none under every oas rule, the recommended and the optional ones, but three about info', async () => {
    // The project is unlicensed (package.json): there is no licence to name or link. A self-hosted
    // deployment's contact is its operators, who have no URL or address the build could know.
    const off = { 'info-license': 'off', 'license-url': 'off', 'contact-properties': 'off' };
    const ruleset = { extends: [[oas as RulesetDefinition, 'all']], rules: off } as RulesetDefinition;
    expect(await spectral(ruleset)).toEqual([]);
  });

  it('gives every operation a summary, a description naming its scopes, and a declared tag', () => {
    expect(operations.length).toBeGreaterThan(25);
    const declared = new Map((openapi.tags ?? []).map((t) => [t.name, t.description ?? '']));
    for (const { name, op } of operations) {
      expect(op.summary?.trim(), `${name} summary`).toBeTruthy();
      expect(op.description?.trim(), `${name} description`).toBeTruthy();
      expect(op.description, `${name} description repeats the summary`).not.toBe(op.summary);
      expect(op.tags?.length, `${name} tags`).toBe(1);
      expect(declared.get(op.tags![0]!), `${name} tag ${op.tags![0]} declared with a description`).toBeTruthy();
      const scopes = op['x-orbit-scopes'];
      expect(scopes, `${name} x-orbit-scopes`).toBeDefined();
      for (const s of scopes!) expect(op.description, `${name} description names ${s}`).toContain(`\`${s}\``);
      // Bearer tokens have no OAuth scopes: a requirement names the scheme only.
      expect(op.security, `${name} security`).toEqual(scopes!.length ? [{ bearer: [] }] : []);
    }
    const used = new Set(operations.map((o) => o.op.tags![0]));
    expect(
      [...declared.keys()].filter((t) => !used.has(t)),
      'declared tags no operation uses',
    ).toEqual([]);
  });

  it('describes every scope in the security scheme and every error code with its status in info', () => {
    const scheme = openapi.components.securitySchemes.bearer?.description ?? '';
    for (const s of ALL_SCOPES) expect(scheme, s).toMatch(new RegExp(`\\| \`${s}\` \\| \\S`));
    for (const [code, { http }] of Object.entries(ERROR_CODES)) {
      expect(openapi.info.description, code).toMatch(new RegExp(`\\| \`${code}\` \\| ${http} \\|`));
    }
  });

  it('documents each listed error code under a response of its status', () => {
    for (const { name, op } of operations) {
      const codes = op['x-orbit-error-codes'] ?? [];
      expect(codes.length, name).toBeGreaterThan(0);
      for (const c of codes) expect(op.responses[String(ERROR_CODES[c as keyof typeof ERROR_CODES].http)], `${name} ${c}`).toBeDefined();
    }
  });
});

describe('AsyncAPI document', () => {
  it('parses with no diagnostic of any severity', async () => {
    const { document, diagnostics } = await new Parser().parse(apiDocumentText('asyncapi'));
    expect(diagnostics.map(shown)).toEqual([]);
    expect(document).toBeDefined();
  });

  it('gives every operation and message a description', () => {
    const doc = JSON.parse(apiDocumentText('asyncapi')) as {
      operations: Record<string, { description?: string; summary?: string }>;
      components: { messages: Record<string, { description?: string }> };
    };
    expect(Object.keys(doc.operations).length).toBeGreaterThan(10);
    for (const [name, op] of Object.entries(doc.operations)) {
      expect(op.description?.trim(), name).toBeTruthy();
      expect(op.description, name).not.toBe(op.summary);
    }
    for (const [name, m] of Object.entries(doc.components.messages)) expect(m.description?.trim(), name).toBeTruthy();
  });
});
