import type { IncomingMessage } from 'node:http';
import { OrbitError } from '@orbit/protocol/errors';
import { MAX_JSON_DEPTH } from '@orbit/protocol/limits';
import { tooDeep } from '@orbit/protocol/primitives';

const decoder = new TextDecoder('utf-8', { fatal: true });

/** An oversized body is drained, not buffered. An empty body parses as `{}` so that commands
 * without fields can be sent bare. */
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
  const { chunks, tooLarge } = await readChunks(req, limit);
  if (tooLarge) throw new OrbitError('PAYLOAD_TOO_LARGE', `body over ${limit} bytes`);
  const buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
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
  if (tooDeep(value)) {
    // Deeper values overflow the stack of JSON.stringify and every recursive walk.
    throw new OrbitError('INVALID_ARGUMENT', `body is nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
  return value;
}

async function drain(req: IncomingMessage): Promise<void> {
  try {
    await readChunks(req, -1);
  } catch {
    /* client went away */
  }
}

/** A body over `limit` is read to its end and dropped. Listeners rather than `for await`: the
 * async iterator is a visible share of a one-chunk request's CPU (docs/benchmarks.md). */
function readChunks(req: IncomingMessage, limit: number): Promise<{ chunks: Buffer[]; tooLarge: boolean }> {
  if (req.readableEnded) return Promise.resolve({ chunks: [], tooLarge: false });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    const listeners = {
      data: (b: Buffer) => {
        size += b.length;
        if (size > limit) tooLarge = true;
        if (!tooLarge) chunks.push(b);
      },
      end: () => done(false),
      error: () => done(true),
      close: () => done(!req.complete),
    };
    const done = (err: boolean) => {
      for (const [event, fn] of Object.entries(listeners)) req.off(event, fn);
      // A client error, not "database unavailable", as a bare ECONNRESET would be classified.
      if (err) reject(new OrbitError('INVALID_ARGUMENT', 'request body incomplete: the client closed the connection'));
      else resolve({ chunks, tooLarge });
    };
    for (const [event, fn] of Object.entries(listeners)) req.on(event, fn);
  });
}
