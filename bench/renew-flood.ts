// Renew-flood scenario (docs/benchmarks.md "Schedules, renew flood, idle sessions"): one worker session of one application, holding one
// started attempt, sends N renew frames at once over a raw WebSocket, while another application's
// producers keep submitting (POST /v1/tasks, 8 at a time, on a queue of their own) and its worker
// keeps completing tasks (submit → assign → start → result, one at a time). The other tenants' submit
// p50/p99 and task turnaround are measured first for a few seconds without the flood (the idle
// figures beside them) and then while the flood runs; also how long the flood takes to be answered,
// how many renew transactions it cost (orbit_renew_batch_size_count), how often the session was
// paused, and the gateway's RSS growth (/proc/PID/status).
//
// Wiring (bench/run.ts): `--scenarios=renew-flood`, with the run's gateway, pool and pid.
import fs from 'node:fs';
import WebSocket from 'ws';
import type { Pool } from '../server/db/pool.js';
import { bootstrap, type CredentialsFile } from '../server/admin/bootstrap.js';
import { metricDelta, scrapeMetrics } from './counters.js';
import { percentile } from './stats.js';

export interface RenewFloodSetup {
  url: string;
  pool: Pool;
  gatewayPid: number | undefined;
}

export interface RenewFloodResult {
  name: string;
  renews: number;
  /** From the first renew sent to the last renew.ok received. */
  floodSeconds: number;
  renewTransactions: number | null;
  pauses: number | null;
  rssGrowthMb: number | null;
  idle: OtherTenants;
  during: OtherTenants;
}

export interface OtherTenants {
  submits: number;
  submitP50Ms: number;
  submitP99Ms: number;
  submitMaxMs: number;
  turnarounds: number;
  turnaroundP99Ms: number;
}

const MB = 1024 * 1024;

function rss(pid: number | undefined): number | null {
  if (!pid) return null;
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : null;
}

async function submit(url: string, t: CredentialsFile, queueId: string, key: string): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(url + '/v1/tasks', {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ queue_id: queueId, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: { key } }),
    });
    const json = (await res.json()) as any;
    if (res.status < 300) return json.data.task.id as string;
    if (res.status !== 503 || attempt > 50) throw new Error(`POST /v1/tasks: ${res.status} ${JSON.stringify(json.error)}`);
  }
}

/** A raw worker session: hello, then frames by type as they arrive. */
async function session(url: string, t: CredentialsFile, queueId: string): Promise<{ ws: WebSocket; next: (type: string) => Promise<any> }> {
  const ws = new WebSocket(url.replace(/^http/, 'ws') + '/v1/workers/connect', ['orbit.worker.v1'], { headers: { authorization: `Bearer ${t.token}` } });
  const waiting = new Map<string, ((f: any) => void)[]>();
  const kept = new Map<string, any[]>();
  ws.on('message', (d) => {
    const f = JSON.parse(d.toString());
    if (f.type === 'renew.ok') return; // counted by the flood's own listener
    const w = waiting.get(f.type)?.shift();
    if (w) w(f);
    else kept.set(f.type, [...(kept.get(f.type) ?? []), f]);
  });
  const next = (type: string) =>
    new Promise<any>((resolve) => {
      const k = kept.get(type)?.shift();
      if (k) return resolve(k);
      waiting.set(type, [...(waiting.get(type) ?? []), resolve]);
    });
  await new Promise<void>((resolve, reject) => (ws.once('open', () => resolve()), ws.once('error', reject)));
  ws.send(
    JSON.stringify({ type: 'hello', protocol: 1, worker_id: `flood-${process.pid}-${Math.random().toString(36).slice(2)}`, queues: [queueId], capacity: 1 }),
  );
  await next('hello.ok');
  return { ws, next };
}

function summary(submits: number[], turnarounds: number[]): OtherTenants {
  return {
    submits: submits.length,
    submitP50Ms: percentile(submits, 50),
    submitP99Ms: percentile(submits, 99),
    submitMaxMs: submits.length ? Math.max(...submits) : NaN,
    turnarounds: turnarounds.length,
    turnaroundP99Ms: percentile(turnarounds, 99),
  };
}

export async function runRenewFlood(
  s: RenewFloodSetup,
  o: { renews?: number; idleSeconds?: number } = {},
  progress: (l: string) => void = () => {},
): Promise<RenewFloodResult> {
  const renews = o.renews ?? 20_000;
  const run = Date.now().toString(36);
  const tenant = (name: string, queues: string[]) =>
    bootstrap(s.pool, { application: `${name}-${run}`, namespace: `${name}-${run}`, environment: 'bench', queues, workerAccess: true, url: '' });
  const flooderT = await tenant('flooder', ['flood']);
  const otherT = await tenant('others', ['work', 'submits']);
  const workQueue = otherT.queues.work!;
  const submitQueue = otherT.queues.submits!;

  const flooder = await session(s.url, flooderT, flooderT.queue_id);
  await submit(s.url, flooderT, flooderT.queue_id, `flood-task-${run}`);
  const a = await flooder.next('task.assign');
  flooder.ws.send(JSON.stringify({ type: 'start', attempt_id: a.attempt_id }));
  await flooder.next('start.ok');
  const worker = await session(s.url, otherT, workQueue);

  const state = { phase: 'idle' as 'idle' | 'flood' | 'stop' };
  const lat = { idle: { submits: [] as number[], turnarounds: [] as number[] }, flood: { submits: [] as number[], turnarounds: [] as number[] } };
  let seq = 0;
  const timed = async (what: 'submits' | 'turnarounds', fn: () => Promise<unknown>) => {
    const p = state.phase;
    const t0 = performance.now();
    await fn();
    // A request counts for the flood when the flood ran during any part of it.
    if (p !== 'stop') lat[p === 'idle' && state.phase === 'idle' ? 'idle' : 'flood'][what].push(performance.now() - t0);
  };
  const producing = Array.from({ length: 8 }, async () => {
    while (state.phase !== 'stop') await timed('submits', () => submit(s.url, otherT, submitQueue, `flood-submit-${run}-${seq++}`));
  });
  const completing = (async () => {
    while (state.phase !== 'stop') {
      await timed('turnarounds', async () => {
        await submit(s.url, otherT, workQueue, `flood-work-${run}-${seq++}`);
        const t = await worker.next('task.assign');
        worker.ws.send(JSON.stringify({ type: 'start', attempt_id: t.attempt_id }));
        await worker.next('start.ok');
        worker.ws.send(JSON.stringify({ type: 'result', attempt_id: t.attempt_id, outcome: 'succeeded' }));
        await worker.next('result.ok');
      });
    }
  })();
  try {
    progress('renew flood: the other tenants alone');
    await new Promise((r) => setTimeout(r, (o.idleSeconds ?? 3) * 1000));
    const before = await scrapeMetrics(s.url);
    const rss0 = rss(s.gatewayPid);
    let peak = rss0;
    const sampler = setInterval(() => (peak = Math.max(peak ?? 0, rss(s.gatewayPid) ?? 0)), 25);
    let answered = 0;
    const allAnswered = new Promise<void>((resolve) =>
      flooder.ws.on('message', (d) => {
        if (JSON.parse(d.toString()).type === 'renew.ok' && ++answered === renews) resolve();
      }),
    );
    const tick = setInterval(() => progress(`renew flood: ${answered}/${renews} answered`), 500);
    state.phase = 'flood';
    const t0 = performance.now();
    const frame = JSON.stringify({ type: 'renew', attempt_ids: [a.attempt_id] });
    for (let i = 0; i < renews; i++) flooder.ws.send(frame);
    await allAnswered;
    const floodSeconds = (performance.now() - t0) / 1000;
    state.phase = 'stop';
    clearInterval(sampler);
    clearInterval(tick);
    const after = await scrapeMetrics(s.url);
    await Promise.all([...producing, completing]);
    flooder.ws.send(JSON.stringify({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded' }));
    await flooder.next('result.ok');
    return {
      name: `renew-flood-${renews}`,
      renews,
      floodSeconds,
      renewTransactions: metricDelta(before, after, 'orbit_renew_batch_size_count'),
      pauses: metricDelta(before, after, 'orbit_session_pauses_total'),
      rssGrowthMb: rss0 === null || peak === null ? null : (peak - rss0) / MB,
      idle: summary(lat.idle.submits, lat.idle.turnarounds),
      during: summary(lat.flood.submits, lat.flood.turnarounds),
    };
  } finally {
    state.phase = 'stop';
    for (const w of [flooder, worker]) w.ws.close(1000);
  }
}

const r1 = (n: number | null) => (n === null || !Number.isFinite(n) ? null : Math.round(n * 10) / 10);

function tenantsJson(t: OtherTenants) {
  return {
    submits: t.submits,
    submit_ms: { p50: r1(t.submitP50Ms), p99: r1(t.submitP99Ms), max: r1(t.submitMaxMs) },
    turnarounds: t.turnarounds,
    turnaround_p99_ms: r1(t.turnaroundP99Ms),
  };
}

/** The scenario's part of the JSON report. */
export function renewFloodJson(r: RenewFloodResult) {
  return {
    renews: r.renews,
    flood_seconds: r1(r.floodSeconds),
    renews_per_s: r1(r.renews / r.floodSeconds),
    renew_transactions: r.renewTransactions,
    pauses: r.pauses,
    gateway_rss_growth_mb: r1(r.rssGrowthMb),
    other_tenants_idle: tenantsJson(r.idle),
    other_tenants_during_flood: tenantsJson(r.during),
  };
}

/** The scenario's line of the text report. */
export function renewFloodText(r: RenewFloodResult): string {
  const t = (x: OtherTenants) =>
    `submit p50 ${r1(x.submitP50Ms)} / p99 ${r1(x.submitP99Ms)} ms (max ${r1(x.submitMaxMs)}, ${x.submits} submits), task turnaround p99 ${r1(x.turnaroundP99Ms)} ms (${x.turnarounds})`;
  return (
    `renew flood: ${r.renews} renews from one session answered in ${r1(r.floodSeconds)} s (${r.renewTransactions ?? 'n/a'} renew transactions, ` +
    `paused ${r.pauses ?? 'n/a'} times, gateway RSS +${r1(r.rssGrowthMb) ?? 'n/a'} MB); other tenants during the flood: ${t(r.during)}; without it: ${t(r.idle)}`
  );
}
