// The files the build wrote, read once; generated in process when running from sources.
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../paths.js';
import type { RawReply } from '../http/router.js';
import { apiDocumentText, type ApiDocumentName } from './documents.js';

const cache = new Map<string, string>();

function document(name: ApiDocumentName): string {
  let text = cache.get(name);
  if (text === undefined) {
    const file = path.join(packageRoot(), 'dist', 'api', `${name}.json`);
    text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : apiDocumentText(name);
    cache.set(name, text);
  }
  return text;
}

export const serveApiDocument = (name: ApiDocumentName) => async (): Promise<RawReply> => ({
  raw: true,
  status: 200,
  contentType: 'application/json; charset=utf-8',
  body: document(name),
});
