#!/usr/bin/env node
// A minimal SDK worker: connects to ORBIT_URL with the token of ORBIT_CREDENTIALS_FILE (default
// .orbit/dev.credentials.json, written by `npm start`), consumes the file's first queue and runs
// the `object.update` handler. Ctrl-C drains: in-flight tasks finish and report before it exits.
import fs from 'node:fs';
import { createWorker, RetryableError } from '../../worker-sdk/index.js';

const file = process.env.ORBIT_CREDENTIALS_FILE ?? '.orbit/dev.credentials.json';
const creds = JSON.parse(fs.readFileSync(file, 'utf8')) as { url: string; token: string; queue_id: string };

const worker = createWorker({
  url: process.env.ORBIT_URL ?? creds.url,
  token: process.env.ORBIT_TOKEN ?? creds.token,
  queues: [creds.queue_id],
  capacity: 4,
  handlers: {
    'object.update': async (e) => {
      // e.concurrencyToken is a bigint for keyed tasks: hand it to the resource with the write.
      console.log(`attempt ${e.attemptId} task ${e.task.id} key=${e.task.concurrencyKey ?? '-'} token=${e.concurrencyToken ?? '-'}`);
      if (e.signal.aborted) throw new RetryableError('lease lost before the write');
      return { updated: (e.task.payload as { object_ref?: string }).object_ref ?? null };
    },
  },
});
worker.on('connected', (h) => console.log(`connected as ${h.worker_id} (session ${h.session_id})`));
process.on('SIGINT', () => void worker.close().then(() => process.exit(0)));
process.on('SIGTERM', () => void worker.close().then(() => process.exit(0)));
