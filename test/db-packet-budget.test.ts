// The statement budget (server/db/packet-budget.ts, decision 0008): coalesced work whose values together
// exceed the server's max_allowed_packet (16 MiB, set by the embedded server) is cut into several
// statements and round trips, never refused. A real gateway process on the shared MariaDB, raw
// workers and raw HTTP: 24 results of ~250 KiB committed in one frame batch (each output is stored
// three times — attempts, tasks, the event — ~20 MiB escaped, which went as one query with the
// COMMIT before the budget), and two POST /v1/tasks:batch of 500 items, ~15 MiB each, at once (the
// payloads, escaped, in the tasks INSERT and again in the receipts INSERT: ~17 MiB each).
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { RowDataPacket } from 'mysql2/promise';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { hello, openRaw, type RawWorker } from './support/raw-worker.js';

const f = useGatewayFixture();

const MiB = 1024 * 1024;
/** Text that escaping grows (quotes, backslashes: 2 bytes each in SQL), with multi-byte characters. */
const RICH = `a "quoted" \\ back'slash é — 😀 \u0000 tab\t;`;
/** Mostly plain text, +9 % when escaped: mysql2's escaping costs ~0.3 µs per escaped character
 * (measured), so 30 MiB of RICH would take seconds of the gateway's CPU. */
const PLAIN = `lorem ipsum dolor sit amet, "consectetur" adipiscing elit é ${'x'.repeat(8)}; `;
/** A string of whole units whose JSON is at most `bytes` long (and within one unit of it). */
function text(bytes: number, tag: string, unit = RICH): string {
  const unitBytes = Buffer.byteLength(JSON.stringify(unit)) - 2;
  return tag + unit.repeat(Math.floor((bytes - Buffer.byteLength(JSON.stringify(tag))) / unitBytes));
}
const sha = (s: string) => crypto.createHash('sha256').update(s).digest('hex');

async function metric(name: string): Promise<number> {
  const r = await call(f.gw.url, 'GET', '/metrics');
  const line = r.text.split('\n').find((l) => l.startsWith(name + ' '));
  return Number(line?.split(' ')[1]);
}

describe('statement budget', () => {
  it('the gateway read max_allowed_packet at start: the budget is 16 MiB less the headroom', async () => {
    expect(await metric('orbit_db_statement_budget_bytes')).toBe(16 * MiB - 64 * 1024);
  });

  it('24 results of ~250 KiB at once: every one result.ok, no session closed, outputs byte-exact', async () => {
    const n = 24;
    const workers: RawWorker[] = [];
    for (let i = 0; i < n; i++) {
      const w = await openRaw(f.gw.url, f.t.token);
      w.send(hello([f.t.queue_id], { capacity: 1 }));
      await w.next('hello.ok');
      workers.push(w);
    }
    const tasks = Array.from({ length: n }, () => ({
      queue_id: f.t.queue_id,
      handler: 'h',
      handler_version: 'v1',
      payload_version: 'v1',
      payload: {},
      idempotency_key: ikey('big-result'),
    }));
    const sub = await call(f.gw.url, 'POST', '/v1/tasks:batch', { token: f.t.token, body: { tasks } });
    expect(sub.status, sub.text).toBe(200);
    const assigns = await Promise.all(workers.map((w) => w.next('task.assign', 30_000)));
    for (const [i, w] of workers.entries()) w.send({ type: 'start', attempt_id: assigns[i].attempt_id });
    await Promise.all(workers.map((w) => w.next('start.ok', 30_000)));

    // ~250 KiB of JSON each (the spec allows 256 KiB), gathered into one frame batch: while this
    // transaction holds the credential row, the frame batches that already started wait on it (two
    // run at once) and every later frame queues for the next one. A WebSocket ping after each
    // frame: its pong comes once the gateway has read and queued the frame (ws answers it in
    // order, and the frame reaches the committer without waiting on I/O).
    const outputs = assigns.map((_a, i) => ({ worker: i, text: text(250 * 1024 - 200, `output ${i}`) }));
    for (const o of outputs) expect(Buffer.byteLength(JSON.stringify(o))).toBeLessThanOrEqual(256 * 1024);
    const frames = assigns.map((a, i) => JSON.stringify({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded', output: outputs[i] }));
    const hold = await f.db.pool.getConnection();
    try {
      await hold.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
      await hold.query('START TRANSACTION');
      await hold.query('SELECT id FROM credentials WHERE namespace_id = ? FOR UPDATE', [f.t.namespace_id]);
      const pongs = workers.map((w) => new Promise((resolve) => w.ws.once('pong', resolve)));
      workers.forEach((w, i) => {
        w.sendRaw(frames[i]!);
        w.ws.ping();
      });
      await Promise.all(pongs);
      await hold.query('COMMIT');
    } finally {
      hold.release();
    }
    const replies = await Promise.all(workers.map((w) => Promise.race([w.next('result.ok', 60_000), w.next('error', 60_000)])));
    replies.forEach((r, i) =>
      expect(r, JSON.stringify(r).slice(0, 300)).toEqual({
        type: 'result.ok',
        attempt_id: assigns[i].attempt_id,
        deduplicated: false,
        task_state: 'SUCCEEDED',
      }),
    );
    for (const w of workers) expect(w.ws.readyState).toBe(WebSocket.OPEN);

    for (const [i, a] of assigns.entries()) {
      const r = await call(f.gw.url, 'GET', `/v1/tasks/${a.task.id}`, { token: f.t.token });
      expect(r.body.data.task.state).toBe('SUCCEEDED');
      expect(JSON.stringify(r.body.data.task.result.output) === JSON.stringify(outputs[i])).toBe(true);
    }
    // Stored byte-exact in each place that holds it.
    const [rows] = await f.db.pool.query<RowDataPacket[]>(
      `SELECT t.id, SHA2(t.result_output, 256) AS task_out, SHA2(a.output, 256) AS attempt_out, SHA2(e.result, 256) AS event_result
         FROM tasks t JOIN attempts a ON a.task_id = t.id JOIN result_events e ON e.task_id = t.id WHERE t.id IN (?)`,
      [assigns.map((a) => a.task.id)],
    );
    expect(rows).toHaveLength(n);
    const want = new Map(assigns.map((a, i) => [a.task.id as string, sha(JSON.stringify(outputs[i]))]));
    const wantEvent = new Map(assigns.map((a, i) => [a.task.id as string, sha(JSON.stringify({ outcome: 'succeeded', output: outputs[i] }))]));
    for (const r of rows) {
      expect(r.task_out).toBe(want.get(r.id));
      expect(r.attempt_out).toBe(want.get(r.id));
      expect(r.event_result).toBe(wantEvent.get(r.id));
    }
    for (const w of workers) w.close();
    await Promise.all(workers.map((w) => w.closed));
  });

  it('two batches of 500 items, ~15 MiB each, at once: every item 201, payloads and receipts stored byte-exact', async () => {
    const batch = (b: number) =>
      Array.from({ length: 500 }, (_, i) => ({
        queue_id: f.t.queue_id,
        handler: 'h',
        handler_version: 'v1',
        payload_version: 'v1',
        payload: { batch: b, item: i, text: text(32_000, `payload ${b}/${i}`, PLAIN) },
        idempotency_key: ikey(`big-batch-${b}`),
      }));
    const splitsBefore = await metric('orbit_db_budget_splits_total');
    const items = [batch(0), batch(1)];
    const bodies = items.map((tasks) => JSON.stringify({ tasks }));
    for (const body of bodies) expect(Buffer.byteLength(body)).toBeGreaterThan(15 * MiB);
    const answers = await Promise.all(bodies.map((rawBody) => call(f.gw.url, 'POST', '/v1/tasks:batch', { token: f.t.token, rawBody })));
    const sent = items.flat();
    const results = answers.flatMap((r) => {
      expect(r.status, r.text.slice(0, 300)).toBe(200);
      return r.body.data.results as { status: number; data: { task: { id: string } } }[];
    });
    expect(results.map((s) => s.status)).toEqual(sent.map(() => 201));
    // Each batch's tasks INSERT (~17 MiB escaped) was cut into statements within the budget.
    expect(await metric('orbit_db_budget_splits_total')).toBeGreaterThanOrEqual(splitsBefore + 2);
    const ids = results.map((s) => s.data.task.id);
    const [rows] = await f.db.pool.query<RowDataPacket[]>(
      `SELECT t.id, SHA2(t.payload, 256) AS payload, SHA2(r.response_data, 256) AS receipt
         FROM tasks t JOIN receipts r ON r.resource_id = t.id WHERE t.id IN (?)`,
      [ids],
    );
    expect(rows).toHaveLength(1000);
    const byId = new Map(rows.map((r) => [r.id as string, r]));
    results.forEach((s, i) => {
      const row = byId.get(s.data.task.id)!;
      expect(row.payload).toBe(sha(JSON.stringify(sent[i]!.payload)));
      expect(row.receipt).toBe(sha(JSON.stringify(s.data)));
    });
  });
});
