import type { IncomingMessage } from 'node:http';
import { OrbitError } from '@orbit/protocol/errors';

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads and parses a JSON body. Oversized → 413 (the rest of the body is drained, not buffered);
 * invalid UTF-8 or JSON → 400. An empty body parses as `{}` so that commands without fields can be
 * sent bare.
 */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const ctype = req.headers['content-type'];
  if (ctype !== undefined && !/^application\/json\s*(;\s*charset=("utf-8"|utf-8)\s*)?$/i.test(ctype.trim())) {
    await drain(req);
    throw new OrbitError('INVALID_ARGUMENT', 'Content-Type must be application/json', { field: 'Content-Type' });
  }
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) {
    await drain(req);
    throw new OrbitError('PAYLOAD_TOO_LARGE', `body over ${limit} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  try {
    for await (const chunk of req) {
      const b = chunk as Buffer;
      size += b.length;
      if (size > limit) tooLarge = true;
      if (!tooLarge) chunks.push(b);
    }
  } catch {
    // The client went away mid-body ('aborted', ECONNRESET): a client error, not "database
    // unavailable" (which a bare ECONNRESET would otherwise be classified as).
    throw new OrbitError('INVALID_ARGUMENT', 'request body incomplete: the client closed the connection');
  }
  if (tooLarge) throw new OrbitError('PAYLOAD_TOO_LARGE', `body over ${limit} bytes`);
  const buf = Buffer.concat(chunks);
  if (buf.length === 0) return {};
  let text: string;
  try {
    text = decoder.decode(buf);
  } catch {
    throw new OrbitError('INVALID_ARGUMENT', 'body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new OrbitError('INVALID_ARGUMENT', 'body is not valid JSON');
  }
  if (nestingDepth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    // Deeper values overflow the stack of JSON.stringify and every recursive walk (500 otherwise).
    throw new OrbitError('INVALID_ARGUMENT', `body is nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
  return value;
}

/** Deepest object/array nesting a request body may have (the body itself is level 1). */
export const MAX_JSON_DEPTH = 512;

/** Nesting depth of a parsed JSON value, computed without recursion; stops counting past `cap`. */
export function nestingDepth(root: unknown, cap: number): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > max) max = d;
    if (max > cap) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) {
      if (child !== null && typeof child === 'object') stack.push([child, d + 1]);
    }
  }
  return max;
}

async function drain(req: IncomingMessage): Promise<void> {
  try {
    for await (const _ of req) {
      /* discard */
    }
  } catch {
    /* client went away */
  }
}
