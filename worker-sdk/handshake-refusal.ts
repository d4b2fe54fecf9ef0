// A WebSocket handshake the gateway answered with an HTTP error (400 bad subprotocol, 401, 403,
// 503, …): its error envelope read into the documented code, so the caller sees UNAUTHENTICATED or
// PERMISSION_DENIED instead of ws's "Unexpected server response".
import type { IncomingMessage } from 'node:http';
import { isErrorCode } from '@orbit/protocol/errors';
import { GatewayError } from './errors.js';

/** The largest refusal body read; the rest is ignored (an envelope is far smaller). */
const MAX_REFUSAL_BYTES = 65536;

/** Reads the refusal `res` and calls `refused` once with the fatal error it means: the envelope's
 * code and message when the body is one, else a code from the HTTP status. */
export function readHandshakeRefusal(res: IncomingMessage, refused: (err: GatewayError) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  res.on('data', (c: Buffer) => {
    size += c.length;
    if (size <= MAX_REFUSAL_BYTES) chunks.push(c);
  });
  res.on('end', () => {
    let code: string =
      res.statusCode === 401
        ? 'UNAUTHENTICATED'
        : res.statusCode === 403
          ? 'PERMISSION_DENIED'
          : (res.statusCode ?? 0) >= 500
            ? 'UNAVAILABLE'
            : 'INVALID_ARGUMENT';
    let message = `handshake refused with HTTP ${res.statusCode}`;
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error?: { code?: unknown; message?: unknown } };
      if (isErrorCode(body.error?.code)) code = body.error.code;
      if (typeof body.error?.message === 'string') message += `: ${body.error.message}`;
    } catch {
      /* not an envelope */
    }
    refused(new GatewayError(code, message, { fatal: true, status: res.statusCode }));
  });
  res.on('error', () => refused(new GatewayError('UNAVAILABLE', `handshake refused with HTTP ${res.statusCode}`, { fatal: true, status: res.statusCode })));
}
