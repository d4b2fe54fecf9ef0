// Background parts of a node attached to the HTTP server: the worker gateway (WebSocket), the
// dispatcher and the sweeper. Each returns a closer run on shutdown, in order.
import type http from 'node:http';
import type { AppContext } from './app-context.js';

export async function attachBackground(_app: AppContext, _server: http.Server): Promise<(() => Promise<void>)[]> {
  return [];
}
