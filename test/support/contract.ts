// Helpers shared by the HTTP contract suites (test/http-*.test.ts): envelope assertions, limited
// credentials, raw-socket requests for input that fetch refuses to send.
import net from 'node:net';
import { expect } from 'vitest';
import { insertCredential } from '../../server/db/credentials.js';
import { hashToken, newToken, type Scope } from '../../server/admin/access.js';
import { newId } from '../../server/ids.js';
import type { TestDb } from './db.js';
import type { RawResponse } from './http.js';

const HEX32 = /^[0-9a-f]{32}$/;

/** Asserts the success envelope and returns `data`. */
export function expectData(res: RawResponse, status: number): any {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort()).toEqual(['data', 'request_id']);
  expect(typeof res.body.request_id).toBe('string');
  expect(res.body.request_id.length).toBeGreaterThan(0);
  expect(res.headers.get('x-request-id')).toBe(res.body.request_id);
  return res.body.data;
}

/** Asserts the error envelope with the given status and code; returns `error`. */
export function expectError(res: RawResponse, status: number, code: string): { code: string; message: string; details?: Record<string, unknown> } {
  if (res.status !== status || res.body?.error?.code !== code) {
    throw new Error(`expected ${status} ${code}, got ${res.status}: ${res.text}`);
  }
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort()).toEqual(['error', 'request_id']);
  expect(typeof res.body.request_id).toBe('string');
  expect(res.body.request_id.length).toBeGreaterThan(0);
  expect(res.headers.get('x-request-id')).toBe(res.body.request_id);
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.error.message.length).toBeGreaterThan(0);
  return res.body.error;
}

export function expectHexId(v: unknown): void {
  expect(v).toMatch(HEX32);
}

/** A credential in `namespaceId` with the given scopes and queues; returns its token and id. */
export async function limitedCredential(
  db: TestDb,
  namespaceId: string,
  scopes: Scope[],
  queueIds: '*' | string[] = '*',
): Promise<{ id: string; token: string }> {
  const token = newToken();
  const id = newId();
  await insertCredential(db.pool, { id, namespaceId, name: 'contract-test', tokenHash: hashToken(token), scopes, queueIds });
  return { id, token };
}

export function taskBody(queueId: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    queue_id: queueId,
    handler: 'object.update',
    handler_version: 'v1',
    payload_version: 'v1',
    payload: { operation_ref: 'update-001', object_ref: 'objects/42' },
    ...over,
  };
}

export interface SocketResponse {
  /** Everything the server wrote before closing (or before the timeout). */
  raw: string;
  status: number | null;
  headers: Record<string, string>;
  body: string;
}

/**
 * Writes raw bytes to the server and collects what comes back until the server closes the socket
 * or a complete response (Content-Length) has arrived (`untilClose`: only when the server closes).
 * `end` half-closes after writing.
 */
export function rawRequest(url: string, bytes: Buffer | string, opts: { end?: boolean; untilClose?: boolean } = {}): Promise<SocketResponse> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname);
    const chunks: Buffer[] = [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      sock.destroy();
      resolve(parseRaw(Buffer.concat(chunks).toString('latin1')));
    };
    sock.on('connect', () => {
      sock.write(bytes);
      if (opts.end) sock.end();
    });
    sock.on('data', (d) => {
      chunks.push(d);
      const parsed = parseRaw(Buffer.concat(chunks).toString('latin1'));
      const len = Number(parsed.headers['content-length'] ?? NaN);
      if (!opts.untilClose && Number.isFinite(len) && Buffer.byteLength(parsed.body, 'latin1') >= len) finish();
    });
    sock.on('end', finish);
    sock.on('close', finish);
    sock.on('error', (err) => {
      if (chunks.length > 0) finish();
      else if (!done) {
        done = true;
        reject(err);
      }
    });
  });
}

function parseRaw(raw: string): SocketResponse {
  const sep = raw.indexOf('\r\n\r\n');
  const head = sep === -1 ? raw : raw.slice(0, sep);
  const body = sep === -1 ? '' : raw.slice(sep + 4);
  const lines = head.split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  return { raw, status: m ? Number(m[1]) : null, headers, body };
}
