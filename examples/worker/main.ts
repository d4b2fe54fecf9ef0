// A complete Orbit worker (the README shows this file). Run it with `npm run example:worker`
// while `npm start` runs; in your own project: install @orbit/worker-sdk (README.md says how), copy this file.
import fs from 'node:fs';
import { createWorker, RetryableError } from '@orbit/worker-sdk/worker';

// ORBIT_URL / ORBIT_TOKEN / ORBIT_QUEUE, or the credentials file `npm start` writes.
const file = process.env.ORBIT_CREDENTIALS_FILE ?? '.orbit/dev.credentials.json';
const creds = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
const url = process.env.ORBIT_URL ?? creds.url;
const token = process.env.ORBIT_TOKEN ?? creds.token;
const queue = process.env.ORBIT_QUEUE ?? creds.queue_id;
if (!url || !token || !queue) {
  console.error(`worker: no ${file}; start the gateway with \`npm start\` or set ORBIT_URL, ORBIT_TOKEN and ORBIT_QUEUE`);
  process.exit(2);
}

// Payload and output of each handler: the handler below is type-checked against them.
interface Tasks {
  'object.update': { payload: { object_ref: string; operation_ref?: string }; output: { updated: string } };
}

const worker = createWorker<Tasks>({
  url,
  token,
  queues: [queue],
  capacity: 4,
  handlers: {
    // Only the handlers named here are assigned to this worker (version v1 unless told otherwise).
    'object.update': async (e) => {
      // e.concurrencyToken (bigint) fences keyed tasks: hand it to the resource with the write.
      console.log(`attempt ${e.attemptId} task ${e.task.id} key=${e.task.concurrencyKey ?? '-'} token=${e.concurrencyToken ?? '-'}`);
      if (e.signal.aborted) throw new RetryableError('lease lost before the write'); // → retried later
      return { updated: e.task.payload.object_ref }; // → SUCCEEDED
    },
  },
});
worker.on('connected', (h) => console.log(`connected as ${h.worker_id}`));
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => void worker.close()); // drain, then run() resolves

// Resolves after close(); rejects on a fatal error (bad token, retired queue, gateway gone): exit 1.
await worker.run().catch((err) => {
  console.error(`worker: ${err.message}`);
  process.exit(1);
});
