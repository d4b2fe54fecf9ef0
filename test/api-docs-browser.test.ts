// The API reference at GET /v1/docs (docs/http-api.md "API documents"): a real gateway process
// serves the page and Redoc's script with the console's strict headers and a CSP of its own, and
// Debian's Chromium renders the reference under that CSP from /v1/openapi.json alone — every tag
// group, an operation's summary and description — with no console error, no CSP violation and no
// request outside the gateway's origin.
import http from 'node:http';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DOCS_CSP } from '../server/api-docs/reference.js';
import { TAGS } from '../server/api-docs/openapi-info.js';
import { ROUTE_META } from '../server/api-docs/routes-meta.js';
import { useGatewayFixture } from './support/fixture.js';
import { useConsoleBrowser } from './support/browser.js';

const f = useGatewayFixture({ tenant: false });
const { open } = useConsoleBrowser(f);
const get = (path: string, init: RequestInit = {}) => fetch(f.gw.url + path, { redirect: 'manual', ...init });

function raw(path: string, headers: Record<string, string>): Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(f.gw.url + path, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      })
      .on('error', reject);
  });
}

function expectStrictHeaders(res: Response): void {
  expect(res.headers.get('content-security-policy')).toBe(DOCS_CSP);
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('x-frame-options')).toBe('DENY');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  expect(res.headers.get('cross-origin-opener-policy')).toBe('same-origin');
  expect(res.headers.get('cross-origin-resource-policy')).toBe('same-origin');
  expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f]{32}$/);
}

describe('GET /v1/docs', () => {
  it('serves the page and the Redoc script without a credential, with strict headers and a CSP naming no other origin', async () => {
    expect(DOCS_CSP).not.toMatch(/unsafe-eval|\*|https?:/);
    expect(DOCS_CSP).toContain("script-src 'self';");
    const page = await get('/v1/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expectStrictHeaders(page);
    const html = await page.text();
    // No inline script (script-src 'self' would block it) and nothing from another host.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|\son[a-z]+=|https?:\/\//i);
    expect(html).toContain('spec-url="openapi.json"');

    const plain = await get('/v1/docs/redoc.standalone.js');
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expectStrictHeaders(plain);
    const script = Buffer.from(await plain.arrayBuffer());
    expect(script.length).toBeGreaterThan(500_000);
    // node:http, not fetch: fetch would undo the encoding.
    const zipped = await raw('/v1/docs/redoc.standalone.js', { 'Accept-Encoding': 'gzip' });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.body.length).toBeLessThan(script.length / 2);
    expect(zlib.gunzipSync(zipped.body).equals(script)).toBe(true);

    expect((await get('/v1/docs', { method: 'POST' })).status).toBe(405);
  });

  it('renders the reference in Chromium under its CSP: tag groups, summaries, descriptions, nothing from another origin', async () => {
    const { page, problems, requests } = await open();
    const violations: string[] = [];
    await page.exposeFunction('orbitCspViolation', (v: string) => violations.push(v));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        (window as unknown as { orbitCspViolation(v: string): void }).orbitCspViolation(`${e.violatedDirective} ${e.blockedURI}`);
      });
    });
    const nav = await page.goto(`${f.gw.url}/v1/docs`);
    expect(nav?.headers()['content-security-policy']).toBe(DOCS_CSP);
    await page
      .getByRole('heading', { name: /Orbit HTTP API/ })
      .first()
      .waitFor({ timeout: 30_000 });

    const submit = ROUTE_META['POST /v1/tasks']!;
    // The sidebar lists every tag group and the operations under it.
    for (const t of TAGS) await page.locator('[role=menuitem]', { hasText: t.name }).first().waitFor();
    await page.locator('[role=menuitem]', { hasText: submit.summary }).first().waitFor();
    // The operation's section: its summary as a heading (followed by Redoc's anchor), its description.
    await page.getByRole('heading', { name: submit.summary }).first().waitFor();
    await page.getByText(submit.description.slice(0, 60)).first().waitFor();
    await page.getByText('Idempotent command:').first().waitFor();
    // The tag's own description and the error table of info.
    await page
      .getByText(TAGS.find((t) => t.name === 'Schedules')!.description.slice(0, 40))
      .first()
      .waitFor();
    await page.getByRole('cell', { name: 'RESOURCE_RETIRED', exact: true }).first().waitFor();

    const origin = new URL(f.gw.url).origin;
    const elsewhere = requests.map((r) => r.url()).filter((u) => !u.startsWith('data:') && !u.startsWith('blob:') && new URL(u).origin !== origin);
    expect(elsewhere).toEqual([]);
    expect(requests.map((r) => new URL(r.url()).pathname)).toEqual(expect.arrayContaining(['/v1/docs', '/v1/docs/redoc.standalone.js', '/v1/openapi.json']));
    expect(violations).toEqual([]);
    expect(problems).toEqual([]);
  });
});
