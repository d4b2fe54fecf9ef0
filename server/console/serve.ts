// Serves the built console on every gateway node. Every response under /console/, 404s included,
// carries the strict security headers.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type http from 'node:http';
import { CONSOLE_FILES, consoleDir } from './files.js';

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

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

interface Asset {
  type: string;
  body: Buffer;
  gzip: Buffer;
}

let assets: Map<string, Asset> | null | undefined;

/** null in a source checkout that was not built. */
function load(): Map<string, Asset> | null {
  if (assets !== undefined) return assets;
  const dir = consoleDir();
  if (!fs.existsSync(path.join(dir, 'index.html'))) return (assets = null);
  assets = new Map();
  for (const f of CONSOLE_FILES) {
    const body = fs.readFileSync(path.join(dir, f));
    assets.set(f, { type: TYPES[path.extname(f)]!, body, gzip: zlib.gzipSync(body, { level: 9 }) });
  }
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
  const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const body = gzip ? a.gzip : a.body;
  const headers: Record<string, string> = {
    'Content-Type': a.type,
    'Content-Length': String(body.length),
    // Revalidated on every load: a node upgraded in place never serves a stale bundle.
    'Cache-Control': 'no-cache',
    Vary: 'Accept-Encoding',
  };
  if (gzip) headers['Content-Encoding'] = 'gzip';
  return send(200, headers, body);
}
