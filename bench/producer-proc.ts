#!/usr/bin/env node
// A benchmark producer process (forked with an IPC channel by bench/scenario.ts): submits its
// share of a scenario's tasks over HTTP, one per `POST /v1/tasks` or many per
// `POST /v1/tasks:batch`, from `concurrency` loops over keep-alive connections.
//   parent → child: ProducerJob ({type:'go', …}), one job at a time (a scenario's warm-up, then
//   its measured window, in the same warm process; each job opens its own keep-alive connections:
//   reusing the warm-up's could meet the gateway's 5 s idle close after a long drain);
//   child → parent: {ev:'ready'}, then per job {ev:'progress', submitted} every 500 ms,
//   {ev:'done', submitted, responseMs} (each request's send → last byte of its reply, ms),
//   or {ev:'error', message} (then exit 2).
import http from 'node:http';

export interface ProducerJob {
  type: 'go';
  url: string;
  token: string;
  queueId: string;
  /** Prefix of idempotency keys and concurrency keys (unique per scenario). */
  prefix: string;
  /** Task indexes of this producer: i = index, index + of, … below count. */
  index: number;
  of: number;
  count: number;
  /** null = unkeyed; else task i gets key `${prefix}/${i % keys}`. */
  keys: number | null;
  /** 0 = one task per request; else items per `POST /v1/tasks:batch`. */
  batch: number;
  concurrency: number;
  /** Paced: task i is due at startAt + i / rate seconds (global index, all producers). */
  rate: number | null;
  /** Epoch milliseconds at which to begin. */
  startAt: number;
}

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const send = (m: Record<string, unknown>) => process.send!(m);
/** Each request's response time in the current job as this client sees it (request written → reply
 * read), ms; emptied when a job starts, so the window's figures exclude the warm-up's requests. */
const responseMs: number[] = [];

interface Reply {
  status: number;
  json: any;
}

function post(agent: http.Agent, base: URL, token: string, path: string, body: unknown, key?: string): Promise<Reply> {
  const data = Buffer.from(JSON.stringify(body));
  const headers: Record<string, string | number> = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    'content-length': data.length,
  };
  if (key) headers['idempotency-key'] = key;
  const sent = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request({ agent, host: base.hostname, port: base.port, method: 'POST', path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        responseMs.push(performance.now() - sent);
        try {
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        } catch (err) {
          reject(err as Error);
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(data);
  });
}

async function run(job: ProducerJob): Promise<number> {
  const base = new URL(job.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.concurrency });
  const body = (i: number): Record<string, unknown> => {
    const b: Record<string, unknown> = { queue_id: job.queueId, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: { i } };
    if (job.keys !== null) b.concurrency_key = `${job.prefix}/${i % job.keys}`;
    return b;
  };
  const mine: number[] = [];
  for (let i = job.index; i < job.count; i += job.of) mine.push(i);
  const size = Math.max(1, job.batch);
  const chunks: number[][] = [];
  for (let k = 0; k < mine.length; k += size) chunks.push(mine.slice(k, k + size));
  let submitted = 0;
  let nextChunk = 0;

  const single = async (i: number) => {
    for (let attempt = 0; ; attempt++) {
      const r = await post(agent, base, job.token, '/v1/tasks', body(i), `${job.prefix}-${i}`);
      if (r.status < 300) return;
      if (r.status !== 503 || attempt > 50) throw new Error(`POST /v1/tasks: ${r.status} ${JSON.stringify(r.json?.error)}`);
      await sleep(100);
    }
  };
  const batch = async (ids: number[]) => {
    let pending = ids;
    for (let attempt = 0; pending.length > 0; attempt++) {
      const items = pending.map((i) => ({ ...body(i), idempotency_key: `${job.prefix}-${i}` }));
      const r = await post(agent, base, job.token, '/v1/tasks:batch', { tasks: items });
      if (r.status === 503 && attempt <= 50) {
        await sleep(100);
        continue;
      }
      if (r.status !== 200) throw new Error(`POST /v1/tasks:batch: ${r.status} ${JSON.stringify(r.json?.error)}`);
      const results = (r.json?.data?.results ?? r.json?.results) as { status: number; error?: unknown }[] | undefined;
      if (!Array.isArray(results) || results.length !== pending.length)
        throw new Error(`POST /v1/tasks:batch: ${pending.length} items, reply ${JSON.stringify(r.json).slice(0, 300)}`);
      const retry: number[] = [];
      results.forEach((x, k) => {
        if (x.status === 503) retry.push(pending[k]!);
        else if (x.status >= 300) throw new Error(`POST /v1/tasks:batch item: ${x.status} ${JSON.stringify(x.error)}`);
      });
      if (retry.length > 0) {
        if (attempt > 50) throw new Error(`POST /v1/tasks:batch: ${retry.length} items still 503`);
        await sleep(100);
      }
      pending = retry;
    }
  };

  const loop = async () => {
    for (;;) {
      const chunk = chunks[nextChunk++];
      if (!chunk) return;
      if (job.rate) {
        const wait = job.startAt + (chunk[0]! / job.rate) * 1000 - now();
        if (wait > 0) await sleep(wait);
      }
      if (job.batch > 0) await batch(chunk);
      else await single(chunk[0]!);
      submitted += chunk.length;
    }
  };
  const tick = setInterval(() => send({ ev: 'progress', submitted }), 500);
  try {
    const wait = job.startAt - now();
    if (wait > 0) await sleep(wait);
    await Promise.all(Array.from({ length: job.concurrency }, loop));
  } finally {
    clearInterval(tick);
    agent.destroy();
  }
  return submitted;
}

process.on('message', (m: ProducerJob) => {
  if (m.type !== 'go') return;
  responseMs.length = 0;
  run(m).then(
    (submitted) => {
      send({ ev: 'done', submitted, responseMs });
    },
    (err: Error) => {
      send({ ev: 'error', message: err.message });
      setTimeout(() => process.exit(2), 50);
    },
  );
});
process.on('disconnect', () => process.exit(0));
send({ ev: 'ready' });
