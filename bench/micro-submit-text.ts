#!/usr/bin/env node
// Micro-benchmark (docs/design.md "Coalesced transactions"):
// a submit transaction's receipts INSERT text (5 rows, the bench's body) formatted with the frozen
// replies as plain strings (before) or as JsonText (now), and 5 reply envelopes serialized whole
// (before) or spliced from the frozen text (now). `node dist/bench/micro-submit-text.js`.
import mysql from 'mysql2';
import { JsonText } from '../server/db/sql-format.js';

const ROWS = 5;
const id = (): string => Math.random().toString(36).slice(2, 12) + 'AbCdEfGhIjK';
const receiptsSql = `INSERT INTO receipts (namespace_id, idempotency_key, operation, target_id, fingerprint, http_status, response_data, resource_id, credential_id, created_at)
       VALUES ${Array(ROWS).fill('(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`;
const [ns, app, queue, cred] = [id(), id(), id(), id()];
const view = (taskId: string, i: number) => ({
  task: {
    id: taskId,
    namespace_id: ns,
    application_id: app,
    queue_id: queue,
    handler: 'h',
    handler_version: 'v1',
    payload_version: 'v1',
    payload: { i },
    business_key: null,
    concurrency_key: null,
    priority: 0,
    state: 'WAITING',
    attempts_made: 0,
    max_attempts: 3,
    not_before: null,
    deadline_at: '2026-12-03T15:00:00.000Z',
    created_at: '2026-12-03T14:00:00.000Z',
    updated_at: '2026-12-03T14:00:00.000Z',
    finished_at: null,
    current_attempt_id: null,
    result: null,
  },
  deduplicated: false,
});
interface Batch {
  plain: unknown[];
  json: unknown[];
  views: unknown[];
  texts: string[];
}
const batches: Batch[] = Array.from({ length: 200 }, (_, k) => {
  const b: Batch = { plain: [], json: [], views: [], texts: [] };
  for (let i = 0; i < ROWS; i++) {
    const taskId = id();
    const data = view(taskId, k * ROWS + i);
    const text = JSON.stringify(data);
    b.views.push(data);
    b.texts.push(text);
    const head = [ns, `bench-unkeyed-1764770000000-${k * ROWS + i}`, 'POST /v1/tasks', '', 'a'.repeat(64), 201];
    b.plain.push(...head, text, taskId, cred, '2026-12-03 14:00:00.000');
    b.json.push(...head, new JsonText(text), taskId, cred, '2026-12-03 14:00:00.000');
  }
  return b;
});

let sink = 0;
/** CPU µs per call of fn over `iters` calls (after a warm-up). */
function cpuPerCall(fn: (b: Batch) => void, iters = 20_000): number {
  for (let i = 0; i < 4_000; i++) fn(batches[i % batches.length]!);
  const t0 = process.cpuUsage();
  for (let i = 0; i < iters; i++) fn(batches[i % batches.length]!);
  const c = process.cpuUsage(t0);
  return (c.user + c.system) / iters;
}
const requestId = 'V1StGXR8_Z5jdHi6B-myT';
const spliced = (text: string) => `{"request_id":${JSON.stringify(requestId)},"data":${text}}`;
for (const b of batches)
  b.views.forEach((d, i) => {
    if (JSON.stringify({ request_id: requestId, data: d }) !== spliced(b.texts[i]!)) throw new Error('the spliced envelope differs');
  });
const cases: [string, (b: Batch) => void][] = [
  ['receipts INSERT, 5 rows: frozen replies as strings', (b) => (sink += mysql.format(receiptsSql, b.plain as never[]).length)],
  ['receipts INSERT, 5 rows: frozen replies as JsonText', (b) => (sink += mysql.format(receiptsSql, b.json as never[]).length)],
  ['5 reply envelopes: JSON.stringify', (b) => b.views.forEach((d) => (sink += JSON.stringify({ request_id: requestId, data: d }).length))],
  ['5 reply envelopes: frozen text spliced', (b) => b.texts.forEach((t) => (sink += spliced(t).length))],
];
const out = new Map<string, number[]>();
for (let round = 0; round < 5; round++) for (const [name, fn] of cases) out.set(name, [...(out.get(name) ?? []), cpuPerCall(fn)]);
for (const [name, us] of out) console.log(`${name.padEnd(56)} ${us.map((x) => x.toFixed(1)).join(' / ')} µs CPU per call`);
if (sink < 0) console.log(sink);
