// Serves the built console on every gateway node. Every response under /console/, 404s included,
// carries the strict security headers. The build (build.ts) imports what the console consists of
// from here; this module must not load esbuild, a dev dependency.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type http from 'node:http';
import { packageRoot } from '../paths.js';

/** The built console's files and their content types. */
export const CONSOLE_FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

export function consoleDir(): string {
  return path.join(packageRoot(), 'dist/console');
}

const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The strict headers of the console's files; the API reference shares them with its own CSP. */
export function securityHeaders(csp: string = CONSOLE_CSP): Record<string, string> {
  return {
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Resource-Policy': 'same-origin',
  };
}

const SECURITY_HEADERS = securityHeaders();

/** A file as sent, plain and gzipped (the API reference serves its files the same way). */
export interface Asset {
  body: Buffer;
  gzip: Buffer;
}

export function gzipped(body: Buffer): Asset {
  return { body, gzip: zlib.gzipSync(body, { level: 9 }) };
}

/** The asset as `req` accepts it, and the headers that say how. Revalidated on every load: a node
 * upgraded in place never serves a stale file. */
export function encoded(req: http.IncomingMessage, a: Asset): { body: Buffer; headers: Record<string, string> } {
  const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const headers: Record<string, string> = { 'Cache-Control': 'no-cache', Vary: 'Accept-Encoding' };
  if (gzip) headers['Content-Encoding'] = 'gzip';
  return { body: gzip ? a.gzip : a.body, headers };
}

let assets: Map<string, Asset & { type: string }> | null | undefined;

/** null in a source checkout that was not built. */
function load(): Map<string, Asset & { type: string }> | null {
  if (assets !== undefined) return assets;
  const dir = consoleDir();
  if (!fs.existsSync(path.join(dir, 'index.html'))) return (assets = null);
  assets = new Map();
  for (const [f, type] of Object.entries(CONSOLE_FILES)) assets.set(f, { type, ...gzipped(fs.readFileSync(path.join(dir, f))) });
  return assets;
}

/** Returns the status sent. */
export function serveConsole(req: http.IncomingMessage, res: http.ServerResponse, pathname: string, requestId: string): number {
  const send = (status: number, headers: Record<string, string>, body: Buffer | string) => {
    res.writeHead(status, { ...SECURITY_HEADERS, 'X-Request-Id': requestId, ...headers });
    res.end(req.method === 'HEAD' ? undefined : body);
    return status;
  };
  const text = (status: number, msg: string) => send(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' }, msg + '\n');
  if (pathname === '/console') return send(308, { Location: '/console/', 'Cache-Control': 'no-store' }, '');
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return send(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }, 'method not allowed\n');
  const files = load();
  if (!files) return text(404, 'the console is not built on this node: run `npm run build`');
  const name = pathname === '/console/' ? 'index.html' : pathname.slice('/console/'.length);
  const a = files.get(name);
  if (!a) return text(404, 'not found');
  const { body, headers } = encoded(req, a);
  return send(200, { 'Content-Type': a.type, 'Content-Length': String(body.length), ...headers }, body);
}
