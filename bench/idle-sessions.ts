// Gateway memory per idle worker session: N raw WebSocket sessions (hello with capacity 0) on top
// of 20 warm-up sessions. Both readings follow a forced full GC in the gateway (bench/gateway-gc-hook)
// so they show retained memory: RSS (from the hook, = /proc VmRSS) and the JS heap in use plus
// external memory (buffers), which does not depend on when V8 and malloc return pages.
import WebSocket from 'ws';

export interface GcReading {
  heapUsed: number;
  /** Memory of C++ objects bound to JS objects (socket and ws buffers): process.memoryUsage().external. */
  external: number;
  rss: number;
}

export interface IdleResult {
  sessions: number;
  rssBeforeMb: number;
  rssAfterMb: number;
  mbPer1000: number;
  /** JS heap in use + external memory. */
  heapBeforeMb: number;
  heapAfterMb: number;
  heapMbPer1000: number;
}

const MB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function idleSessions(url: string, token: string, queueId: string, count: number, gc: () => Promise<GcReading>): Promise<IdleResult> {
  const open = async (i: number) =>
    new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(url.replace(/^http/, 'ws') + '/v1/workers/connect', ['orbit.worker.v1'], { headers: { authorization: `Bearer ${token}` } });
      ws.once('error', reject);
      ws.once('open', () => ws.send(JSON.stringify({ type: 'hello', protocol: 1, worker_id: `idle-${process.pid}-${i}`, queues: [queueId], capacity: 0 })));
      ws.on('message', (d) => {
        if (JSON.parse(d.toString()).type === 'hello.ok') resolve(ws);
      });
    });
  const warm = await Promise.all(Array.from({ length: 20 }, (_, i) => open(1_000_000 + i)));
  await sleep(500);
  const before = await gc();
  const sockets: WebSocket[] = [];
  for (let i = 0; i < count; i += 50) sockets.push(...(await Promise.all(Array.from({ length: Math.min(50, count - i) }, (_, j) => open(i + j)))));
  await sleep(1000);
  const after = await gc();
  const all = [...sockets, ...warm];
  await Promise.all(all.map((ws) => new Promise<void>((r) => (ws.once('close', () => r()), ws.close(1000)))));
  return {
    sessions: count,
    rssBeforeMb: before.rss / MB,
    rssAfterMb: after.rss / MB,
    mbPer1000: ((after.rss - before.rss) / MB / count) * 1000,
    heapBeforeMb: (before.heapUsed + before.external) / MB,
    heapAfterMb: (after.heapUsed + after.external) / MB,
    heapMbPer1000: ((after.heapUsed + after.external - before.heapUsed - before.external) / MB / count) * 1000,
  };
}
