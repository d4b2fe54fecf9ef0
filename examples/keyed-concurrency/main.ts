#!/usr/bin/env node
// Keyed-concurrency example (README.md, "Resource keys: the keyed example"): two dedicated queues, one task in each
// with the SAME resource key, two SDK workers of capacity 4 whose handler writes through the SDK's
// fenced resource on MySQL. Orbit grants the key to one attempt at a time with increasing tokens;
// the resource rejects a write carrying an older token. Prints exactly two lines:
//
//   queues=2 completed=2 tokens_increasing=true
//   resource_writes=2 stale_write_rejected=true worker_drained=true
//
// and exits non-zero on any failure, within a 20 s deadline.
//
// Configuration (environment):
//   ORBIT_CREDENTIALS_FILE  the JSON file written by `npm start` / `orbit-admin bootstrap --worker-access`
//                           (default .orbit/dev.credentials.json)
//   ORBIT_URL               gateway URL (default: the file's "url")
//   ORBIT_TOKEN             bearer token (default: the file's "token")
//   ORBIT_EXAMPLE_MYSQL_DSN mysql://user:pass@host:port/db of the database that holds the example's
//                           resource (the fence tables). Defaults, in order: the credentials file's
//                           "mysql_dsn", ORBIT_MYSQL_DSN, then the embedded database of `npm start`
//                           (found through .orbit/mysql/mysqld.pid).
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import mysql from 'mysql2/promise';
import { createClient, type Attempt } from '@orbit/worker-sdk/client';
import { createWorker, type Worker } from '@orbit/worker-sdk/worker';
import { createFencedResource } from '@orbit/worker-sdk/fenced-resource';
import { StaleTokenError } from '@orbit/worker-sdk/fenced-resource';
import { fail, readCredentials as readKitCredentials, runMain, type CredentialsFields } from '../example-kit.js';

const DEADLINE_MS = 20_000;
const HANDLER = 'object.update';

/** The kit's credentials plus the namespace this example creates its queues in. */
function readCredentials(): { url: string; token: string; namespaceId: string; creds: CredentialsFields } {
  const c = readKitCredentials();
  if (!c.creds.namespace_id) fail('the credentials file has no "namespace_id"');
  return { ...c, namespaceId: c.creds.namespace_id };
}

/** The embedded database of `npm start`: its port is on the server's command line. */
function embeddedDsn(): string | null {
  try {
    const dataDir = path.resolve(process.env.ORBIT_HOME ?? '.orbit', 'mysql');
    const pid = Number(fs.readFileSync(path.join(dataDir, 'mysqld.pid'), 'utf8').trim());
    const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const port = args.find((a) => a.startsWith('--port='))?.slice('--port='.length);
    return port ? `mysql://orbit:orbit-local@127.0.0.1:${port}/orbit` : null;
  } catch {
    return null;
  }
}

function resourceDsn(creds: CredentialsFields): string {
  const dsn = process.env.ORBIT_EXAMPLE_MYSQL_DSN || creds.mysql_dsn || process.env.ORBIT_MYSQL_DSN || embeddedDsn();
  if (!dsn) fail('no MySQL database for the fenced resource: set ORBIT_EXAMPLE_MYSQL_DSN=mysql://user:pass@host:port/db');
  return dsn;
}

function poolFor(dsn: string): mysql.Pool {
  const u = new URL(dsn);
  if (u.protocol !== 'mysql:') fail('ORBIT_EXAMPLE_MYSQL_DSN must be mysql://user:pass@host:port/db');
  return mysql.createPool({
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    database: decodeURIComponent(u.pathname.replace(/^\//, '')),
    connectionLimit: 8,
    supportBigNumbers: true,
    bigNumberStrings: true,
  });
}

async function main(): Promise<void> {
  const { url, token, namespaceId, creds } = readCredentials();
  const pool = poolFor(resourceDsn(creds));
  const workers: Worker[] = [];
  try {
    const run = `${Date.now().toString(36)}-${crypto.randomBytes(4).toString('hex')}`;
    const client = createClient({ url, token });

    // The resource: a fence table (highest token per key), its operation table, and the effect.
    const fence = createFencedResource(pool, { table: 'orbit_example_fence' });
    await fence.ensureSchema();
    await pool.query(
      `CREATE TABLE IF NOT EXISTS orbit_example_writes (
         id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT COMMENT 'write order',
         run_id VARCHAR(64) NOT NULL COMMENT 'example run',
         resource_key VARBINARY(768) NOT NULL COMMENT 'resource key written',
         token BIGINT UNSIGNED NOT NULL COMMENT 'fencing token of the write',
         task_id CHAR(32) NOT NULL COMMENT 'Orbit task that wrote',
         PRIMARY KEY (id), KEY ix_run (run_id)
       ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='effects written by the keyed-concurrency example'`,
    );

    // Two dedicated queues (unique per run).
    const queueIds: string[] = [];
    for (const suffix of ['a', 'b']) {
      const name = `keyed-example-${run}-${suffix}`.toLowerCase().slice(0, 64);
      const q = await client.createQueue({ name, lease_seconds: 10, max_active_attempts: 4 }, { idempotencyKey: `create-queue-${name}` });
      queueIds.push(q.queue.id);
    }

    // Two SDK workers of capacity 4 on both queues. The handler writes through the fence with the
    // token Orbit gave this attempt; the attempt id is the operation id (a retry of the same
    // attempt would not write twice).
    const handler = async (e: { task: { id: string; concurrencyKey?: string }; concurrencyToken?: bigint; attemptId: string }) => {
      if (!e.task.concurrencyKey || e.concurrencyToken === undefined) throw new Error('expected a keyed task with a token');
      const w = await fence.write({
        namespace: namespaceId,
        key: e.task.concurrencyKey,
        token: e.concurrencyToken,
        operationId: `attempt-${e.attemptId}`,
        apply: async (conn) => {
          await conn.query('INSERT INTO orbit_example_writes (run_id, resource_key, token, task_id) VALUES (?, ?, ?, ?)', [
            run,
            e.task.concurrencyKey,
            e.concurrencyToken!.toString(),
            e.task.id,
          ]);
        },
      });
      return { token: e.concurrencyToken.toString(), applied: w.applied };
    };
    const quiet = { info: () => {}, warn: () => {}, error: (o: object, m?: string) => console.error(m ?? '', o) };
    for (let i = 0; i < 2; i++) {
      workers.push(createWorker({ url, token, queues: queueIds, capacity: 4, handlers: { [HANDLER]: handler }, logger: quiet }));
    }
    await Promise.all(workers.map((w) => w.ready));

    // One task per queue, the same resource key.
    const key = `example-object/${run}`;
    const taskIds: string[] = [];
    for (const [i, q] of queueIds.entries()) {
      const r = await client.submitTask(
        { queue_id: q, handler: HANDLER, handler_version: 'v1', payload_version: 'v1', payload: { step: i }, concurrency_key: key },
        { idempotencyKey: `submit-${run}-${i}` },
      );
      taskIds.push(r.task.id);
    }

    // Wait for both to finish.
    let completed = 0;
    for (;;) {
      const tasks = await Promise.all(taskIds.map((id) => client.getTask(id)));
      const bad = tasks.find((t) => ['FAILED', 'CANCELLED', 'DEADLINE_EXCEEDED', 'NEEDS_REVIEW'].includes(t.state));
      if (bad) fail(`task ${bad.id} ended ${bad.state}: ${JSON.stringify(bad.result)}`);
      completed = tasks.filter((t) => t.state === 'SUCCEEDED').length;
      if (completed === taskIds.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }

    // The attempts API: the permits of the key, in grant order, carry increasing tokens, and the
    // second was granted only after the first finished.
    const attempts: Attempt[] = (await Promise.all(taskIds.map((id) => client.getTaskAttempts(id)))).flat().filter((a) => a.state === 'SUCCEEDED');
    if (attempts.length !== 2) fail(`expected 2 succeeded attempts, found ${attempts.length}`);
    attempts.sort((a, b) => (a.leased_at < b.leased_at ? -1 : a.leased_at > b.leased_at ? 1 : 0));
    const [first, second] = attempts as [Attempt, Attempt];
    if (first.concurrency_token === undefined || second.concurrency_token === undefined) fail('attempts of a keyed task must carry a concurrency_token');
    const tokensIncreasing =
      BigInt(second.concurrency_token) > BigInt(first.concurrency_token) && first.finished_at !== null && first.finished_at <= second.leased_at;

    // The resource saw both writes, in token order.
    const [rows] = await pool.query<mysql.RowDataPacket[]>('SELECT CAST(token AS CHAR) AS token FROM orbit_example_writes WHERE run_id = ? ORDER BY id', [run]);
    const resourceWrites = rows.length;
    if (resourceWrites === 2 && BigInt(rows[1]!.token) <= BigInt(rows[0]!.token)) fail('the resource applied writes out of token order');

    // A late write with the first (older) token, e.g. from a paused process whose lease ran out,
    // must be rejected by the resource.
    let staleRejected = false;
    try {
      await fence.write({
        namespace: namespaceId,
        key,
        token: BigInt(first.concurrency_token),
        operationId: `late-replay-${run}`,
        apply: async (conn) => {
          await conn.query('INSERT INTO orbit_example_writes (run_id, resource_key, token, task_id) VALUES (?, ?, ?, ?)', [
            run,
            key,
            first.concurrency_token,
            first.task_id,
          ]);
        },
      });
    } catch (err) {
      if (!(err instanceof StaleTokenError)) throw err;
      staleRejected = true;
    }
    const [after] = await pool.query<mysql.RowDataPacket[]>('SELECT COUNT(*) AS n FROM orbit_example_writes WHERE run_id = ?', [run]);
    if (Number(after[0]!.n) !== resourceWrites) staleRejected = false;

    // Drain: no new work, in-flight handlers finish, results acknowledged, sockets closed with 1000.
    await Promise.all(workers.map((w) => w.close({ timeoutMs: 5000 })));
    const workerDrained = workers.every((w) => w.inFlight === 0 && !w.connected);

    console.log(`queues=${queueIds.length} completed=${completed} tokens_increasing=${tokensIncreasing}`);
    console.log(`resource_writes=${resourceWrites} stale_write_rejected=${staleRejected} worker_drained=${workerDrained}`);
    if (queueIds.length !== 2 || completed !== 2 || !tokensIncreasing || resourceWrites !== 2 || !staleRejected || !workerDrained) process.exitCode = 1;
  } finally {
    await Promise.all(workers.map((w) => w.close({ timeoutMs: 1000 }).catch(() => {})));
    await pool.end().catch(() => {});
  }
}

runMain('keyed-concurrency', main, DEADLINE_MS);
