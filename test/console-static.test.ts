// The console's files as the gateway serves them (docs/operations.md): strict headers on every response
// under /console/, the right content types, the size budget, gzip, and no inline script or style
// that a CSP without unsafe-inline would block. Plain HTTP against a real gateway process.
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { CONSOLE_BUDGET_GZIP_BYTES } from '../server/console/build.js';
import { useGatewayFixture } from './support/fixture.js';

const f = useGatewayFixture({ tenant: false });
const get = (path: string, init: RequestInit = {}) => fetch(f.gw.url + path, { redirect: 'manual', ...init });

function expectStrictHeaders(res: Response): void {
  const csp = res.headers.get('content-security-policy') ?? '';
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*|https?:/);
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f]{32}$/);
}

describe('GET /console/', () => {
  it('serves the page, its script and stylesheet with their types and the strict headers', async () => {
    const page = await get('/console/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expectStrictHeaders(page);
    const html = await page.text();
    expect(html).toContain('<script type="module" src="app.js"></script>');
    // Nothing inline (the CSP would block it) and nothing from another host.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=|https?:\/\//i);
    const js = await get('/console/app.js');
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expectStrictHeaders(js);
    const css = await get('/console/app.css');
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expectStrictHeaders(css);
    expect(await js.text()).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
  });

  it('the page plus every asset it loads is at most 200 KiB gzipped, and is sent gzipped', async () => {
    let total = 0;
    for (const file of ['', 'app.js', 'app.css', 'favicon.svg']) {
      const res = await get(`/console/${file}`, { headers: { 'accept-encoding': 'gzip' } });
      expect(res.status).toBe(200);
      const raw = Buffer.from(await res.arrayBuffer());
      // fetch decodes gzip transparently: measure by compressing what arrived.
      total += zlib.gzipSync(raw, { level: 9 }).length;
    }
    expect(total).toBeLessThanOrEqual(CONSOLE_BUDGET_GZIP_BYTES);
    const res = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      import('node:http').then(
        (http) => http.get(`${f.gw.url}/console/app.js`, { headers: { 'accept-encoding': 'gzip' } }, resolve).on('error', reject),
        reject,
      );
    });
    res.resume();
    expect(res.headers['content-encoding']).toBe('gzip');
  });

  it('redirects /console, refuses other methods and unknown files with the same headers', async () => {
    const r = await get('/console');
    expect(r.status).toBe(308);
    expect(r.headers.get('location')).toBe('/console/');
    // Files are looked up by name in the built set: nothing else on disk is reachable.
    for (const path of ['/console/nope.js', '/console/app.js.map', '/console/assets/app.js', '/console/%2Fetc%2Fpasswd', '/console/index.html%00']) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expectStrictHeaders(res);
    }
    const post = await get('/console/', { method: 'POST', body: '{}' });
    expect(post.status).toBe(405);
    expectStrictHeaders(post);
    const head = await get('/console/app.css', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('needs no credential (the page asks for one) and leaves the API untouched', async () => {
    expect((await get('/console/', { headers: { authorization: 'Bearer orb_nonsense-token' } })).status).toBe(200);
    const api = await get('/v1/queues');
    expect(api.status).toBe(401);
    expect(api.headers.get('content-security-policy')).toBeNull();
  });
});
