// Gateway memory per idle worker session: N raw WebSocket sessions (hello with capacity 0), RSS of
// the gateway process read from /proc before and after.
import fs from 'node:fs';
import WebSocket from 'ws';

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

export async function idleSessionsRss(url: string, token: string, queueId: string, pid: number, count: number) {
  const open = async (i: number) =>
    new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(url.replace(/^http/, 'ws') + '/v1/workers/connect', ['orbit.worker.v1'], { headers: { authorization: `Bearer ${token}` } });
      ws.once('error', reject);
      ws.once('open', () => ws.send(JSON.stringify({ type: 'hello', protocol: 1, worker_id: `idle-${process.pid}-${i}`, queues: [queueId], capacity: 0 })));
      ws.on('message', (d) => {
        if (JSON.parse(d.toString()).type === 'hello.ok') resolve(ws);
      });
    });
  // Warm up (JIT, pools) with a few sessions, then measure.
  const warm = await Promise.all(Array.from({ length: 20 }, (_, i) => open(1_000_000 + i)));
  await new Promise((r) => setTimeout(r, 500));
  global.gc?.();
  const before = rssMb(pid);
  const sockets: WebSocket[] = [];
  for (let i = 0; i < count; i += 50) sockets.push(...(await Promise.all(Array.from({ length: Math.min(50, count - i) }, (_, j) => open(i + j)))));
  await new Promise((r) => setTimeout(r, 1000));
  const after = rssMb(pid);
  for (const ws of [...sockets, ...warm]) ws.close(1000);
  return { sessions: count, rssBeforeMb: before, rssAfterMb: after, mbPer1000: ((after - before) / count) * 1000 };
}
