// A raw WebSocket worker for protocol tests: no SDK, frames as plain objects.
import WebSocket from 'ws';
import { expect } from 'vitest';
import { waitForValue } from './wait.js';

/** Every socket openRaw opened in this file that has not closed yet, with the test that opened it. */
const openSockets = new Map<WebSocket, string>();

export interface RawWorker {
  ws: WebSocket;
  frames: any[];
  send(frame: unknown): void;
  sendRaw(data: string | Buffer, binary?: boolean): void;
  /** Next frame (optionally of a type), waiting up to `ms`. Frames of other types are kept. */
  next(type?: string, ms?: number): Promise<any>;
  closed: Promise<{ code: number; reason: string }>;
  close(): void;
}

export function openRaw(url: string, token: string | null, protocols: string[] = ['orbit.worker.v1']): Promise<RawWorker> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    const ws = new WebSocket(url.replace(/^http/, 'ws') + '/v1/workers/connect', protocols, { headers, maxPayload: 64 * 1024 * 1024 });
    openSockets.set(ws, `${expect.getState().currentTestName ?? '(outside a test)'} -> ${url}`);
    ws.once('close', () => openSockets.delete(ws));
    const frames: any[] = [];
    const waiters: { type?: string; resolve: (f: any) => void }[] = [];
    const closed = new Promise<{ code: number; reason: string }>((res) => ws.once('close', (code, reason) => res({ code, reason: reason.toString() })));
    ws.on('message', (data) => {
      const f = JSON.parse(data.toString());
      const i = waiters.findIndex((w) => !w.type || w.type === f.type);
      if (i >= 0) waiters.splice(i, 1)[0]!.resolve(f);
      else frames.push(f);
    });
    ws.once('unexpected-response', (_req, res) => {
      reject(Object.assign(new Error(`handshake refused: ${res.statusCode}`), { status: res.statusCode }));
      // With a listener ws leaves the refused request to us: abort it (emits error, then close).
      ws.terminate();
    });
    ws.once('error', reject);
    ws.once('open', () =>
      resolve({
        ws,
        frames,
        closed,
        send: (f) => ws.send(JSON.stringify(f)),
        sendRaw: (d, binary = false) => ws.send(d, { binary }),
        next(type?: string, ms = 10_000) {
          const i = frames.findIndex((f) => !type || f.type === type);
          if (i >= 0) return Promise.resolve(frames.splice(i, 1)[0]);
          return new Promise((res, rej) => {
            const w = { type, resolve: (f: any) => (clearTimeout(t), res(f)) };
            const t = setTimeout(() => {
              waiters.splice(waiters.indexOf(w), 1);
              rej(new Error(`no ${type ?? 'frame'} within ${ms} ms; have ${JSON.stringify(frames).slice(0, 500)}`));
            }, ms);
            waiters.push(w);
          });
        },
        close: () => ws.close(1000),
      }),
    );
  });
}

export function hello(queueIds: string[], over: Record<string, unknown> = {}) {
  return { type: 'hello', protocol: 1, worker_id: `raw-${Math.random().toString(36).slice(2, 10)}`, queues: queueIds, capacity: 4, ...over };
}

/**
 * End-of-file check: fails if a socket openRaw opened is still open (or connecting). Sockets the
 * test closed itself and whose closing handshake is still running get a moment to finish. Every
 * remaining socket is terminated before the error is thrown, so the run continues cleanly.
 */
export async function assertNoOpenRawSockets(graceMs = 2000): Promise<void> {
  const closing = [...openSockets.keys()].filter((ws) => ws.readyState === WebSocket.CLOSING);
  await waitForValue(
    async () => closing.every((ws) => ws.readyState === WebSocket.CLOSED),
    (done) => done,
    { timeout: graceMs, interval: 20 },
  );
  const leaked = [...openSockets].filter(([ws]) => ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING);
  const all = [...openSockets.keys()];
  await Promise.all(
    all.map(
      (ws) =>
        new Promise<void>((resolve) => {
          if (ws.readyState === WebSocket.CLOSED) return resolve();
          const t = setTimeout(resolve, 1000);
          ws.once('close', () => (clearTimeout(t), resolve()));
          ws.on('error', () => {});
          ws.terminate();
        }),
    ),
  );
  openSockets.clear();
  if (leaked.length > 0) {
    throw new Error(
      `${leaked.length} raw worker socket(s) still open at the end of the file (close them in the test with w.close()):\n` +
        leaked.map(([, where]) => `  opened in: ${where}`).join('\n'),
    );
  }
}
