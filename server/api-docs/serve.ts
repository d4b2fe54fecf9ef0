// The files the build wrote, read once; generated in process when running from sources, the same
// text either way, so that the linted text is the served text.
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../paths.js';
import type { RawReply } from '../http/router.js';
import type { RequestCtx } from '../http/context.js';
import { encoded, gzipped, type Asset } from '../console/serve.js';
import { asyncApiDocument } from './asyncapi.js';
import { openApiDocument } from './openapi.js';

type ApiDocumentName = 'openapi' | 'asyncapi';

export function apiDocumentText(name: ApiDocumentName): string {
  return JSON.stringify(name === 'openapi' ? openApiDocument() : asyncApiDocument(), null, 2) + '\n';
}

const cache: Partial<Record<ApiDocumentName, Asset>> = {};

/** The document and its gzip, made once: openapi.json is ~0.9 MB as text, ~30 kB gzipped. */
function document(name: ApiDocumentName): Asset {
  const read = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : apiDocumentText(name));
  return (cache[name] ??= gzipped(Buffer.from(read(path.join(packageRoot(), 'dist', 'api', `${name}.json`)))));
}

export const serveApiDocument =
  (name: ApiDocumentName) =>
  async (ctx: RequestCtx): Promise<RawReply> => ({
    raw: true,
    status: 200,
    contentType: 'application/json; charset=utf-8',
    ...encoded(ctx.req, document(name)),
  });
