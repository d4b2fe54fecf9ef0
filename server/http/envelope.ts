// The one writer of Orbit's JSON envelope, also on a raw socket for the refusals written before
// there is a response (a request node's parser refused, a refused WebSocket upgrade).
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { OrbitError } from '@orbit/protocol/errors';

/** `json`: `data` already serialized, spliced in rather than serialized a second time. */
export function sendData(res: ServerResponse, requestId: string, status: number, data: unknown, json?: string): void {
  send(
    res,
    requestId,
    status,
    json === undefined ? JSON.stringify({ request_id: requestId, data }) : `{"request_id":${JSON.stringify(requestId)},"data":${json}}`,
  );
}

export function sendError(res: ServerResponse, requestId: string, err: OrbitError): void {
  send(res, requestId, err.httpStatus, errorEnvelope(requestId, err));
}

/** false when the socket could no longer be written and was destroyed unanswered. */
export function endSocketWithError(socket: Duplex, requestId: string, err: OrbitError): boolean {
  if (!socket.writable) {
    socket.destroy();
    return false;
  }
  const text = errorEnvelope(requestId, err);
  const head = [`HTTP/1.1 ${err.httpStatus} ${STATUS_CODES[err.httpStatus] ?? 'Error'}`];
  for (const [name, value] of Object.entries(envelopeHeaders(requestId, text))) head.push(`${name}: ${value}`);
  socket.end(`${head.join('\r\n')}\r\nConnection: close\r\n\r\n${text}`);
  return true;
}

function errorEnvelope(requestId: string, err: OrbitError): string {
  return JSON.stringify({ request_id: requestId, error: err.toBody() });
}

function envelopeHeaders(requestId: string, text: string): Record<string, string | number> {
  return {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'X-Request-Id': requestId,
    'Cache-Control': 'no-store',
  };
}

function send(res: ServerResponse, requestId: string, status: number, text: string): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, envelopeHeaders(requestId, text));
  res.end(text);
}
