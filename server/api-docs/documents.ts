// The text of each API document, the same whether the build writes it or a gateway running from
// sources generates it, so that the linted text is the served text.
import { asyncApiDocument } from './asyncapi.js';
import { openApiDocument } from './openapi.js';

export type ApiDocumentName = 'openapi' | 'asyncapi';

export function apiDocumentText(name: ApiDocumentName): string {
  return JSON.stringify(name === 'openapi' ? openApiDocument() : asyncApiDocument(), null, 2) + '\n';
}
