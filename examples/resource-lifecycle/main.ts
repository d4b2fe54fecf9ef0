// resource-lifecycle: creates an empty queue and a subscription on it, then retires them in the
// recommended order (subscription first, then the queue), printing the ids and, when a retirement
// is refused, the blocking reason. It only touches the resources it created in this run.
//
//   ORBIT_URL=http://127.0.0.1:8080 ORBIT_CREDENTIALS_FILE=.orbit/dev.credentials.json npm run example:lifecycle
//
// Every command carries an explicit Idempotency-Key derived from this run's id, so re-sending one
// (after a timeout, say) replays its receipt instead of acting twice.
import fs from 'node:fs';
import crypto from 'node:crypto';
import { createClient, OrbitApiError } from '@orbit/worker-sdk/client';

function settings(): { url: string; token: string } {
  const file = process.env.ORBIT_CREDENTIALS_FILE;
  let creds: { url?: string; token?: string } = {};
  if (file) {
    try {
      creds = JSON.parse(fs.readFileSync(file, 'utf8')) as typeof creds;
    } catch (err) {
      throw new Error(`cannot read ORBIT_CREDENTIALS_FILE ${file}: ${(err as Error).message} (run \`npm start\`, which writes .orbit/dev.credentials.json)`);
    }
  }
  const url = process.env.ORBIT_URL ?? creds.url;
  const token = process.env.ORBIT_TOKEN ?? creds.token;
  if (!url || !token) throw new Error('set ORBIT_URL and ORBIT_CREDENTIALS_FILE (or ORBIT_TOKEN)');
  return { url, token };
}

async function main(): Promise<number> {
  const { url, token } = settings();
  const client = createClient({ url, token });
  const run = `${Date.now().toString(36)}-${crypto.randomBytes(4).toString('hex')}`;
  const key = (step: string) => `resource-lifecycle-${run}-${step}`;

  const { queue } = await client.createQueue({ name: `lifecycle-${run}` }, { idempotencyKey: key('queue') });
  console.log(`queue_id=${queue.id} name=${queue.name}`);
  const { subscription } = await client.createSubscription(
    { name: `lifecycle-${run}`, queue_id: queue.id, event_types: ['task.succeeded', 'task.failed', 'task.needs_review'] },
    { idempotencyKey: key('subscription') },
  );
  console.log(`subscription_id=${subscription.id} cursor=${subscription.cursor}`);

  // Recommended order: producers stopped and executions drained (nothing was submitted here), every
  // delivery consumed and acknowledged, then the subscription, then the queue.
  try {
    const sub = await client.getSubscription(subscription.id);
    const r = await client.retireSubscription(
      subscription.id,
      { expected_revision: sub.revision, reason: 'resource-lifecycle example finished' },
      { idempotencyKey: key('retire-subscription') },
    );
    console.log(`subscription_retired=true retired_sequence=${r.subscription.retired_sequence}`);
  } catch (err) {
    report('subscription', subscription.id, err);
    return 1;
  }
  try {
    const q = await client.getQueue(queue.id);
    const r = await client.retireQueue(
      queue.id,
      { expected_revision: q.revision, reason: 'resource-lifecycle example finished' },
      { idempotencyKey: key('retire-queue') },
    );
    console.log(`queue_retired=true retired_at=${r.queue.retired_at}`);
  } catch (err) {
    report('queue', queue.id, err);
    return 1;
  }
  return 0;
}

/** A refused retirement is reported with the resource id and the blocking reason, never forced. */
function report(kind: string, id: string, err: unknown): void {
  if (err instanceof OrbitApiError) console.log(`${kind}_retired=false ${kind}_id=${id} code=${err.code} reason=${JSON.stringify(err.message)}`);
  else console.log(`${kind}_retired=false ${kind}_id=${id} error=${JSON.stringify((err as Error).message)}`);
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`resource-lifecycle failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
