// One session's frame flood against a real gateway process: a worker holding one
// attempt sends 20 000 renew frames at once over a raw WebSocket, while a worker of another
// application keeps completing tasks and producers of a third keep submitting on their own queue.
// The flooding session is paused at its frames-in-flight limit and its renews are coalesced
// (server/gateway/frame-window.ts, session.ts), its transactions take turns with the other
// applications' (`admission`, dispatch/coalesce.ts): every renew is answered correctly, the others are served on
// (a generous bound per request, not a benchmark: the figures are `npm run bench --
// --scenarios=renew-flood`), and the gateway's memory stays bounded.
import fs from 'node:fs';
import { expect, it } from 'vitest';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { newId } from '../server/ids.js';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { call } from './support/http.js';
import { hello, openRaw } from './support/raw-worker.js';
import { submitTask } from './support/submit.js';
import { waitFor } from './support/wait.js';

const f = useGatewayFixture();

const FLOOD = 20_000;
/** Generous: a submit or a task turnaround of another tenant answered within this while the flood runs. */
const BOUND_MS = 5_000;
const MB = 1024 * 1024;

/** The gateway process's resident memory (VmRSS of /proc/PID/status), in bytes. */
function rss(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/** A sample's value (`name` with its labels, as /metrics writes it) from the gateway's /metrics. */
async function metric(name: string): Promise<number> {
  const line = (await call(f.gw.url, 'GET', '/metrics')).text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : NaN;
}

interface Step {
  start: number;
  end: number;
}

/** Runs `step` again and again until `stop()`, recording when each one started and ended. */
async function loop(stop: () => boolean, step: () => Promise<void>, steps: Step[]): Promise<void> {
  while (!stop()) {
    const start = performance.now();
    await step();
    steps.push({ start, end: performance.now() });
  }
}

/** The durations of the steps that overlapped [from, to]: a running loop always has one. */
const overlapping = (steps: Step[], from: number, to: number) => steps.filter((x) => x.end >= from && x.start <= to).map((x) => x.end - x.start);

it(`a ${FLOOD}-renew flood from one session: every renew answered, other tenants served within ${BOUND_MS} ms, gateway memory bounded`, async () => {
  const pid = f.gw.child.pid!;
  const busy: CredentialsFile = await newTenant(f.db);
  const producers: CredentialsFile = await newTenant(f.db);

  // The flooder holds one started attempt.
  const flooder = await openRaw(f.gw.url, f.t.token);
  flooder.send(hello([f.t.queue_id], { capacity: 1 }));
  await flooder.next('hello.ok');
  await submitTask(f.gw.url, f.t);
  const a = await flooder.next('task.assign');
  flooder.send({ type: 'start', attempt_id: a.attempt_id });
  await flooder.next('start.ok');
  // Frame i renews the attempt; every 50th also names an unknown attempt, every 1000th a malformed
  // id and the attempt twice. Replies come in frame order, each with its own frame's lost ids.
  const frames = Array.from({ length: FLOOD }, (_, i) => {
    const ids = [a.attempt_id];
    if (i % 50 === 0) ids.push(newId());
    if (i % 1000 === 7) ids.push('not-an-id', a.attempt_id);
    return ids;
  });
  let answered = 0;
  const wrong: unknown[] = [];
  flooder.ws.on('message', (d) => {
    const m = JSON.parse(d.toString());
    if (m.type !== 'renew.ok') return;
    const lost = frames[answered++]!.filter((id) => id !== a.attempt_id);
    if (JSON.stringify(m.lost) !== JSON.stringify(lost) || m.leases.length !== 1 || m.leases[0].attempt_id !== a.attempt_id) wrong.push(m);
  });

  // Another application's worker completing tasks, and a third one's producers, all the time.
  const worker = await openRaw(f.gw.url, busy.token);
  worker.send(hello([busy.queue_id], { capacity: 1 }));
  await worker.next('hello.ok');
  let stopping = false;
  const stop = () => stopping;
  const turnarounds: Step[] = [];
  const submits: Step[] = [];
  const completing = loop(
    stop,
    async () => {
      const task = await submitTask(f.gw.url, busy);
      const t = await worker.next('task.assign', 30_000);
      expect(t.task.id).toBe(task.id);
      worker.send({ type: 'start', attempt_id: t.attempt_id });
      await worker.next('start.ok', 30_000);
      worker.send({ type: 'result', attempt_id: t.attempt_id, outcome: 'succeeded' });
      expect((await worker.next('result.ok', 30_000)).task_state).toBe('SUCCEEDED');
    },
    turnarounds,
  );
  const submitting = Array.from({ length: 4 }, () => loop(stop, () => submitTask(f.gw.url, producers).then(() => {}), submits));
  await waitFor('the other tenants to be served', () => turnarounds.length >= 2 && submits.length >= 8, { timeout: 10_000 });

  const rss0 = rss(pid);
  let peak = rss0;
  const sampler = setInterval(() => (peak = Math.max(peak, rss(pid))), 25);
  const floodStart = performance.now();
  for (const ids of frames) flooder.ws.send(JSON.stringify({ type: 'renew', attempt_ids: ids }));
  try {
    await waitFor(`${FLOOD} renew.ok`, () => answered >= FLOOD, { timeout: 60_000, interval: 20 });
  } finally {
    clearInterval(sampler);
    stopping = true;
  }
  const floodEnd = performance.now();
  peak = Math.max(peak, rss(pid));
  await Promise.all([completing, ...submitting]);
  const during = { turnarounds: overlapping(turnarounds, floodStart, floodEnd), submits: overlapping(submits, floodStart, floodEnd) };

  expect(answered).toBe(FLOOD);
  expect(wrong).toEqual([]);
  // The other tenants were served while the flood ran, each request within the bound.
  expect(during.turnarounds.length).toBeGreaterThanOrEqual(1);
  expect(during.submits.length).toBeGreaterThanOrEqual(4);
  expect(Math.max(...during.turnarounds, ...during.submits)).toBeLessThan(BOUND_MS);
  expect((peak - rss0) / MB).toBeLessThan(100);
  // The flooder was paused at its limit and its renews shared transactions.
  expect(await metric('orbit_session_pauses_total')).toBeGreaterThanOrEqual(1);
  // A renew batch is made of frames in flight: never more than the limit (64) plus one socket read
  // (64 KiB, ~1 000 of these frames), and far fewer transactions than frames.
  const batches = await metric('orbit_renew_batch_size_count');
  expect(batches).toBeLessThan(FLOOD / 10);
  expect(await metric('orbit_renew_batch_size_bucket{le="2048"}')).toBe(batches);
  expect(await metric('orbit_session_frames_in_flight')).toBe(0);

  // The flooder's session is still open and correct: its attempt finishes normally.
  flooder.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded' });
  await waitFor('the flooder result.ok', () => flooder.frames.find((m) => m.type === 'result.ok'), { timeout: 10_000 });
  for (const w of [flooder, worker]) w.close();
  await Promise.all([flooder.closed, worker.closed]);
}, 120_000);
