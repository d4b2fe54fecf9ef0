// The one writer of Orbit's JSON envelope: `{"request_id","data"}` or `{"request_id","error"}`,
// with the X-Request-Id header, on a node:http response or — for the refusals written before there
// is one (a request node's parser refused, a refused WebSocket upgrade) — on the raw socket.
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { OrbitError, type ErrorBody } from '@orbit/protocol/errors';

/** Writes `{"request_id","data"}` with the X-Request-Id header. `json`: `data` already serialized
 * (JSON.stringify(data), e.g. a submit's frozen reply), spliced in: the same bytes as serializing
 * the envelope, without serializing `data` a second time. */
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

/**
 * Answers a connection that has no ServerResponse with the error envelope and closes it: the
 * status line, the headers every envelope carries, `Connection: close`. A socket that can no
 * longer be written is destroyed instead (false: nothing was answered).
 */
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
  const body: { request_id: string; error: ErrorBody } = { request_id: requestId, error: err.toBody() };
  return JSON.stringify(body);
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
