// GET /v1/docs: the OpenAPI document rendered by Redoc (docs/http-api.md "API documents"). The page
// and Redoc's standalone script come from the gateway itself and the script reads /v1/openapi.json,
// so the reference works offline and its CSP names no other origin. Public, like the documents.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { OrbitError } from '@orbit/protocol/errors';
import { packageRoot } from '../paths.js';
import { encoded, gzipped, securityHeaders, type Asset } from '../console/serve.js';
import type { RequestCtx } from '../http/context.js';
import type { RawReply } from '../http/router.js';

export const REDOC_FILE = 'redoc.standalone.js';

/** The one remote resource the bundle loads by itself: the Redocly logo under the sidebar. */
const REDOC_REMOTE_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';

/** Redoc's script with its remote logo replaced by an empty image, which Redoc then hides: the page
 * loads nothing from another origin. A bundle that no longer names the logo exactly once fails here
 * (and so fails the build) rather than being served unchecked; test/api-docs-browser.test.ts
 * catches any other remote load. */
export function offlineRedoc(script: Buffer): Buffer {
  const text = script.toString('utf8');
  const at = text.indexOf(`"${REDOC_REMOTE_LOGO}"`);
  if (at < 0 || text.indexOf(`"${REDOC_REMOTE_LOGO}"`, at + 1) >= 0) throw new Error(`the Redoc bundle does not name ${REDOC_REMOTE_LOGO} exactly once`);
  return Buffer.from(text.replace(`"${REDOC_REMOTE_LOGO}"`, '"data:,"'));
}

/** The console's policy but for what Redoc needs: styled-components injects <style> elements, its
 * search index runs in a worker made from a blob, and the empty favicon and logo are data: images. */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  'worker-src blob:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

// Relative URLs: the page resolves them against /v1/docs, so a proxy that mounts the API under a
// prefix keeps working. The <redoc> element is what the standalone script renders on its own, so
// the page needs no inline script.
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Orbit HTTP API reference</title>
<link rel="icon" href="data:,">
</head>
<body>
<redoc spec-url="openapi.json" hide-download-button></redoc>
<script src="docs/${REDOC_FILE}"></script>
</body>
</html>
`;

const page = gzipped(Buffer.from(PAGE));
/** Loaded on first use; null when this node has no Redoc bundle. */
let redoc: Asset | null | undefined;

/** The installed package's bundle (a dev dependency); null without it. */
export function installedRedoc(): string | null {
  try {
    return createRequire(import.meta.url).resolve(`redoc/bundles/${REDOC_FILE}`);
  } catch {
    return null;
  }
}

function reply(ctx: RequestCtx, a: Asset, contentType: string): RawReply {
  const { body, headers } = encoded(ctx.req, a);
  return { raw: true, status: 200, contentType, headers: { ...securityHeaders(DOCS_CSP), ...headers }, body };
}

export async function serveReferencePage(ctx: RequestCtx): Promise<RawReply> {
  return reply(ctx, page, 'text/html; charset=utf-8');
}

export async function serveRedoc(ctx: RequestCtx): Promise<RawReply> {
  if (redoc === undefined) {
    // The copy the build made next to the documents, else the installed one (a source checkout).
    const built = path.join(packageRoot(), 'dist', 'api', REDOC_FILE);
    const file = fs.existsSync(built) ? built : installedRedoc();
    redoc = file ? gzipped(offlineRedoc(fs.readFileSync(file))) : null;
  }
  if (!redoc) throw new OrbitError('NOT_FOUND', 'the API reference is not built on this node: run `npm run build`');
  return reply(ctx, redoc, 'text/javascript; charset=utf-8');
}
