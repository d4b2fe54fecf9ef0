#!/usr/bin/env node
// An SDK worker process whose handler writes through the SDK's fenced resource (MySQL), for the
// fenced chaos test. Deliberately a "zombie" when its lease is lost: it ignores the AbortSignal and
// still tries its write, so a stale token reaches the fence. Prints JSON lines: {"ev":"ready"},
// {"ev":"ready","session":…} per session, {"ev":"begin"|"writing","attempt":…} when a handler
// starts and before its write, {"ev":"write",...} per applied write and {"ev":"stale",...} per rejected one.
//   ORBIT_URL, ORBIT_TOKEN, WORKER_QUEUES, WORKER_CAPACITY (default 4), WORKER_DELAY_MS (0..N ms
//   before the write, default 20), FENCE_DSN (mysql://…), FENCE_NAMESPACE.
import { createWorker } from '@orbit/worker-sdk/worker';
import { createFencedResource } from '@orbit/worker-sdk/fenced-resource';
import { StaleTokenError } from '@orbit/worker-sdk/fenced-resource';
import { createPool } from '../server/db/pool.js';
import { exitOnFatal, printLine as out, workerOptionsFromEnv } from './worker-proc-env.js';

const env = process.env;
// Orbit's pool: the session settings of every Orbit connection (db/session-setup.ts) apply here too.
const pool = createPool(env.FENCE_DSN!, { connectionLimit: 4 });
const fence = createFencedResource(pool, { table: 'chaos_fence' });
const delay = Number(env.WORKER_DELAY_MS ?? 20);

const worker = createWorker({
  ...workerOptionsFromEnv(4),
  logger: { info: () => {}, warn: () => {}, error: () => {} },
  handlers: {
    h: async (e) => {
      out({ ev: 'begin', attempt: e.attemptId }); // a pipe write is synchronous: seen even if frozen next
      await new Promise((r) => setTimeout(r, Math.random() * delay)); // ignores e.signal on purpose
      const key = e.task.concurrencyKey!;
      out({ ev: 'writing', attempt: e.attemptId });
      try {
        await fence.write({
          namespace: env.FENCE_NAMESPACE!,
          key,
          token: e.concurrencyToken!,
          operationId: e.attemptId,
          apply: async (c) => {
            await c.query('INSERT INTO chaos_writes (resource_key, token, attempt_id, task_id, pid) VALUES (?, ?, ?, ?, ?)', [
              key,
              e.concurrencyToken!.toString(),
              e.attemptId,
              e.task.id,
              process.pid,
            ]);
          },
        });
        out({ ev: 'write', attempt: e.attemptId, key, token: e.concurrencyToken!.toString(), aborted: e.signal.aborted });
      } catch (err) {
        if (err instanceof StaleTokenError) out({ ev: 'stale', attempt: e.attemptId, key, token: err.token.toString(), highest: err.highestToken.toString() });
        throw err;
      }
      return { ok: true };
    },
  },
});
worker.on('connected', (hello) => out({ ev: 'ready', session: hello.session_id }));
exitOnFatal(worker);
process.on('SIGTERM', () => {
  void worker.close({ timeoutMs: 5000 }).finally(() => pool.end().finally(() => process.exit(0)));
});
