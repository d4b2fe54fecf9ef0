// Real data for the console tests, made through the public API and a real worker socket: queues in
// every state, tasks in every live state (a keyed task holding its key with a fencing token, one
// waiting behind it, one in review, finished ones), a hostile payload, a subscription.
import type { GatewayFixture } from './fixture.js';
import { connect, createQueue, nextOf, result, start, submit } from './dispatch-fixture.js';
import { call, ikey } from './http.js';

export const XSS = '<img src=x onerror=alert(1)>';
const LATER = () => new Date(Date.now() + 3_600_000).toISOString();

export interface ConsoleData {
  orders: any;
  billing: any;
  reports: any;
  key: string;
  holder: { taskId: string; token: string };
  waitingKeyed: any;
  review: any;
  xss: any;
  cancelTarget: any;
  reportsTask: any;
  reportsSub: any;
  ordersSub: any;
  schedule: any;
}

export async function seedConsoleData(f: GatewayFixture): Promise<ConsoleData> {
  const orders = await createQueue(f, { name: 'orders', lease_seconds: 600 });
  const billing = await createQueue(f, { name: 'billing' });
  const reports = await createQueue(f, { name: 'reports' });
  const paused = await call(f.gw.url, 'POST', `/v1/queues/${billing.id}:pause`, {
    token: f.t.token,
    key: ikey('p'),
    body: { expected_revision: billing.revision },
  });
  if (paused.status !== 200) throw new Error(paused.text);
  const key = 'object/42';
  const { w } = await connect(f, [orders.id], { capacity: 8, concurrency_keys: true, worker_id: 'worker-orders-1' });
  const run = async (over: Record<string, unknown>) => {
    const t = await submit(f, orders.id, { handler: 'object.update', ...over });
    const a = await nextOf(w, ['task.assign']);
    await start(w, a.attempt_id);
    return { task: t, attempt: a };
  };
  for (let i = 0; i < 3; i++) {
    const done = await run({ payload: { n: i } });
    await result(
      w,
      done.attempt.attempt_id,
      i === 2 ? 'failed' : 'succeeded',
      i === 2 ? { error: { code: 'UPSTREAM', message: 'upstream said no' } } : { output: { ok: i } },
    );
  }
  const first = await run({ concurrency_key: key, payload: { step: 1 } });
  await result(w, first.attempt.attempt_id, 'succeeded', { output: { written: true } });
  const holding = await run({ concurrency_key: key, payload: { step: 2 } });
  const waitingKeyed = await submit(f, orders.id, { handler: 'object.update', concurrency_key: key, payload: { step: 3 } });
  const reviewed = await run({ payload: { step: 'review' } });
  await result(w, reviewed.attempt.attempt_id, 'unknown', { error: { code: 'LOST', message: 'worker lost the connection to the resource' } });
  const xss = await submit(f, orders.id, {
    handler: 'object.update',
    business_key: XSS,
    payload: { note: XSS, nested: { html: `</pre>${XSS}` } },
    not_before: LATER(),
  });
  const cancelTarget = await submit(f, orders.id, { handler: 'object.update', business_key: 'cancel-me', not_before: LATER() });
  const reportsTask = await submit(f, reports.id, { handler: 'report.build', business_key: 'nightly' });
  const sub = (name: string, queueId: string) =>
    call(f.gw.url, 'POST', '/v1/subscriptions', {
      token: f.t.token,
      key: ikey('s'),
      body: { name, queue_id: queueId, event_types: ['task.succeeded', 'task.failed'] },
    });
  const reportsSub = (await sub('reports-feed', reports.id)).body.data.subscription;
  const ordersSub = (await sub('orders-feed', orders.id)).body.data.subscription;
  // A schedule on orders that does not fire during the tests (hourly, from now).
  const sched = await call(f.gw.url, 'POST', '/v1/schedules', {
    token: f.t.token,
    key: ikey('sc'),
    body: {
      name: 'nightly-reindex',
      version: {
        calendar: { every_seconds: 3600 },
        task: {
          queue_id: orders.id,
          handler: 'index.rebuild',
          handler_version: 'v1',
          payload_version: 'v1',
          payload: { scope: 'all' },
          concurrency_key: 'index/main',
        },
      },
    },
  });
  if (sched.status !== 201) throw new Error(sched.text);
  return {
    orders,
    billing,
    reports,
    key,
    holder: { taskId: holding.task.id, token: String(holding.attempt.concurrency_token) },
    waitingKeyed,
    review: reviewed.task,
    xss,
    cancelTarget,
    reportsTask,
    reportsSub,
    ordersSub,
    schedule: sched.body.data.schedule,
  };
}
