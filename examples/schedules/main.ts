#!/usr/bin/env node
// Schedules example (docs/schedules.md): creates a queue and a schedule firing every second, runs an SDK
// worker on the queue, watches the schedule's first three fires complete through the worker, then
// pauses the schedule and retires it. Prints exactly two lines:
//
//   fires=3 distinct_times=3 tasks_succeeded=3
//   paused=true retired=true
//
// and exits non-zero on any failure, within a 20 s deadline.
//
// Configuration (environment):
//   ORBIT_CREDENTIALS_FILE  the JSON file written by `npm start` / `orbit-admin bootstrap --worker-access`
//                           (default .orbit/dev.credentials.json); the credential needs the scopes
//                           schedules:manage, queues:manage, tasks:read and workers:*
//   ORBIT_URL               gateway URL (default: the file's "url")
//   ORBIT_TOKEN             bearer token (default: the file's "token")
import crypto from 'node:crypto';
import { createClient, type ScheduleFire } from '@orbit/worker-sdk/client';
import { createWorker, type Worker } from '@orbit/worker-sdk/worker';
import { OrbitApiError } from '@orbit/worker-sdk/client';
import { fail, readCredentials, runMain } from '../example-kit.js';

const DEADLINE_MS = 20_000;
const HANDLER = 'report.build';

async function main(): Promise<void> {
  const { url, token } = readCredentials();
  const client = createClient({ url, token });
  const run = `${Date.now().toString(36)}-${crypto.randomBytes(4).toString('hex')}`;
  let worker: Worker | undefined;
  try {
    const queue = (await client.createQueue({ name: `schedules-example-${run}` }, { idempotencyKey: `schedules-example-queue-${run}` })).queue;
    // The worker first, so the first fire finds it connected.
    const seen = new Set<string>();
    const quiet = { info: () => {}, warn: () => {}, error: (o: object, m?: string) => console.error(m ?? '', o) };
    worker = createWorker({
      url,
      token,
      queues: [queue.id],
      capacity: 4,
      logger: quiet,
      handlers: {
        [HANDLER]: async (e) => {
          seen.add(e.task.id);
          return { built: true };
        },
      },
    });
    await worker.ready;

    const created = await client.createSchedule(
      {
        name: `every-second-${run}`,
        version: {
          calendar: { every_seconds: 1 },
          task: {
            queue_id: queue.id,
            handler: HANDLER,
            handler_version: 'v1',
            payload_version: 'v1',
            payload: { report: 'daily' },
            concurrency_key: `report/${run}`,
          },
        },
      },
      { idempotencyKey: `schedules-example-create-${run}` },
    );
    const id = created.schedule.id;

    // The first three fires (oldest first) and their tasks, until all three succeeded.
    let first: ScheduleFire[] = [];
    let succeeded = 0;
    for (;;) {
      const page = await client.listScheduleFires(id, { limit: 500 });
      first = page.fires.slice().reverse().slice(0, 3);
      const bad = first.find((f) => f.outcome !== 'created');
      if (bad) fail(`fire ${bad.scheduled_for} was ${bad.outcome}`);
      if (first.length === 3) {
        const tasks = await Promise.all(first.map((f) => client.getTask(f.task_id!)));
        const failed = tasks.find((t) => ['FAILED', 'CANCELLED', 'DEADLINE_EXCEEDED', 'NEEDS_REVIEW'].includes(t.state));
        if (failed) fail(`task ${failed.id} ended ${failed.state}`);
        succeeded = tasks.filter((t) => t.state === 'SUCCEEDED' && t.schedule_id === id && seen.has(t.id)).length;
        if (succeeded === 3) break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const distinct = new Set(first.map((f) => f.scheduled_for)).size;

    const paused = await client.pauseSchedule(id, { expected_revision: created.schedule.revision }, { idempotencyKey: `schedules-example-pause-${run}` });
    const retired = await client.retireSchedule(
      id,
      { expected_revision: paused.schedule.revision, reason: 'example finished' },
      { idempotencyKey: `schedules-example-retire-${run}` },
    );
    await worker.close({ timeoutMs: 5000 });

    console.log(`fires=${first.length} distinct_times=${distinct} tasks_succeeded=${succeeded}`);
    console.log(`paused=${paused.schedule.paused} retired=${retired.schedule.retired_at !== undefined}`);
    if (first.length !== 3 || distinct !== 3 || succeeded !== 3 || !paused.schedule.paused || retired.schedule.retired_at === undefined) process.exitCode = 1;
  } catch (err) {
    if (err instanceof OrbitApiError && err.code === 'PERMISSION_DENIED') {
      fail(`${err.message}: the credential needs schedules:manage (credentials made before schedules existed lack it; bootstrap a new one)`);
    }
    throw err;
  } finally {
    await worker?.close({ timeoutMs: 1000 }).catch(() => {});
  }
}

runMain('schedules', main, DEADLINE_MS);
