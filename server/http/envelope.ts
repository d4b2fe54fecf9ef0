import type { ServerResponse } from 'node:http';
import { OrbitError, type ErrorBody } from '@orbit/protocol/errors';

/** Writes `{"request_id","data"}` with the X-Request-Id header. */
export function sendData(res: ServerResponse, requestId: string, status: number, data: unknown): void {
  send(res, requestId, status, JSON.stringify({ request_id: requestId, data }));
}

export function sendError(res: ServerResponse, requestId: string, err: OrbitError): void {
  const body: { request_id: string; error: ErrorBody } = { request_id: requestId, error: err.toBody() };
  send(res, requestId, err.httpStatus, JSON.stringify(body));
}

function send(res: ServerResponse, requestId: string, status: number, text: string): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'X-Request-Id': requestId,
    'Cache-Control': 'no-store',
  });
  res.end(text);
}
