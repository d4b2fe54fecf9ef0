#!/usr/bin/env node
// graphile-worker's drain of a backlog, the peer of Orbit's `drain` scenario, driven by
// bench/graphile-peer.ts. In a fresh database: a warm-up drain (PEER_WARMUP jobs, not measured),
// then PEER_JOBS no-op jobs added in bulk while no runner runs, then one runner drains them.
// Lines on stdout, answered on stdin:
//   {"ev":"added"}  the backlog is committed, no runner runs  → parent reads CPU, writes "go"
//   {"ev":"done", start, end, completed}  runner start → jobs table found empty (epoch ms)
//                                                            → parent reads CPU, writes "stop"
//   {"ev":"stats", xact, tuples_written, polls}  pg_stat_database deltas over the window
// Env: PEER_DSN (the server's `postgres` database), PEER_DB (created here), PEER_JOBS,
// PEER_WARMUP, PEER_MODE (defaults | batched).
/* global process, URL, performance, setTimeout */
import { EventEmitter } from 'node:events';
import readline from 'node:readline';
import { Logger, makeWorkerUtils, run } from 'graphile-worker';
import pg from 'pg';

const env = process.env;
const jobs = Number(env.PEER_JOBS);
const warmup = Number(env.PEER_WARMUP ?? 0);
const dbUrl = new URL(env.PEER_DSN);
dbUrl.pathname = `/${env.PEER_DB}`;
const connectionString = dbUrl.href;
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Errors only: a per-job log line would be the runner's largest cost (NO_LOG_SUCCESS is set
// too), and the defaults' pool-size warning is a known property of the defaults.
const logger = new Logger(() => (level, message) => {
  if (level === 'error') process.stderr.write(`graphile-worker ${level}: ${message}\n`);
});
// Defaults: the runner's options left as shipped except its concurrency (a pool of 10
// connections, one fetch and one completion statement per job). Batched: the documented
// batching options ("Performance: batching"): a local queue of 500 locked jobs per fetch and
// completions gathered into one statement.
const MODES = {
  defaults: {},
  batched: { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
};
const preset = MODES[env.PEER_MODE];
if (!preset) throw new Error(`PEER_MODE=${env.PEER_MODE}: defaults or batched`);

const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
async function expect(word) {
  const { value, done } = await lines.next();
  if (done || value.trim() !== word) throw new Error(`expected "${word}" on stdin, got ${done ? 'end' : JSON.stringify(value)}`);
}

async function addBacklog(utils, n, tag) {
  for (let i = 0; i < n; i += 1000) {
    const specs = [];
    for (let k = i; k < Math.min(n, i + 1000); k++) specs.push({ identifier: 'noop', payload: { tag, i: k } });
    await utils.addJobs(specs);
  }
}

/** Runs a runner until its queue is empty; returns its start, the moment the table was found
 * empty and the polls that took (the events count jobs handed to completion, not committed). */
async function drain(n, poller) {
  const events = new EventEmitter();
  let completed = 0;
  let allHandled;
  const handled = new Promise((r) => (allHandled = r));
  events.on('job:complete', () => {
    if (++completed >= n) allHandled();
  });
  const start = now();
  const runner = await run({ connectionString, concurrency: 24, noHandleSignals: true, logger, events, taskList: { noop: async () => {} }, preset });
  await handled;
  let polls = 0;
  for (;;) {
    polls++;
    const r = await poller.query('SELECT count(*)::int AS n FROM graphile_worker._private_jobs');
    if (r.rows[0].n === 0) break;
    await sleep(2);
  }
  return { runner, start, end: now(), completed, polls };
}

/** This database's committed transactions and rows written, read on a fresh connection (whose
 * own SELECT shows in a later reading: one per reading, subtracted). */
async function stats() {
  const c = new pg.Client({ connectionString });
  await c.connect();
  const r = await c.query(
    'SELECT xact_commit::bigint AS x, (tup_inserted + tup_updated + tup_deleted)::bigint AS w FROM pg_stat_database WHERE datname = current_database()',
  );
  await c.end();
  return { xact: Number(r.rows[0].x), written: Number(r.rows[0].w) };
}

/** A connection that polls the jobs table at the end of a drain, closed after it. */
async function withPoller(f) {
  const poller = new pg.Client({ connectionString });
  await poller.connect();
  try {
    return await f(poller);
  } finally {
    await poller.end();
  }
}

async function main() {
  const admin = new pg.Client({ connectionString: env.PEER_DSN });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${env.PEER_DB}`);
  await admin.end();
  const utils = await makeWorkerUtils({ connectionString, logger });
  await utils.migrate();
  if (warmup > 0) {
    await addBacklog(utils, warmup, 'warmup');
    await withPoller(async (p) => (await drain(warmup, p)).runner.stop());
  }
  await addBacklog(utils, jobs, 'window');
  // Connections flush their statistics when they close: the counters below hold every
  // statement so far once these have.
  await utils.release();
  await sleep(300);
  const d = await withPoller(async (poller) => {
    const before = await stats();
    out({ ev: 'added' });
    await expect('go');
    const r = await drain(jobs, poller);
    out({ ev: 'done', start: r.start, end: r.end, completed: r.completed });
    await expect('stop');
    await r.runner.stop();
    return { ...r, before };
  });
  await sleep(300);
  const after = await stats();
  out({ ev: 'stats', xact: after.xact - d.before.xact - d.polls - 1, tuples_written: after.written - d.before.written, polls: d.polls });
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`graphile-worker peer: ${err.stack ?? err}\n`);
    process.exit(1);
  },
);
