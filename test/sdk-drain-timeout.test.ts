// A close that times out (docs/worker-protocol.md "Prefetch", its Drain bullet), against a real gateway
// process: waiting attempts are dropped unstarted, the running handlers' signal is aborted, and
// the results of the handlers that return are still sent on the open session before the close;
// with no session open, the `result` event says the result was not sent (RESULT_NOT_SENT) and the
// lease runs out. The abort's reason is an UnknownOutcomeError: a handler that rethrows it reports
// `unknown` (NEEDS_REVIEW). The Go SDK's TestDrainTimeoutReports / TestDrainTimeoutNoSession do the same.
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, createWorker, PermanentError, RESULT_NOT_SENT, type TaskContext, type Worker, type WorkerEvents } from '../worker-sdk/index.js';
import { useGatewayFixture } from './support/fixture.js';
import { ikey } from './support/http.js';
import { silent } from './support/sdk-worker.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';
import { sleep, waitFor } from './support/wait.js';

const f = useGatewayFixture();
const workers: Worker[] = [];
const proxies: TcpProxy[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close({ timeoutMs: 500 })));
  await Promise.all(proxies.splice(0).map((p) => p.close()));
});

const client = () => createClient({ url: f.gw.url, token: f.t.token });
type ResultReport = WorkerEvents['result'][0];

async function newQueue(): Promise<string> {
  const r = await client().createQueue({ name: ikey('drain-timeout'), lease_seconds: 30 }, { idempotencyKey: ikey('q') });
  return r.queue.id;
}

async function submit(queueId: string, n: number): Promise<string> {
  const r = await client().submitTask(
    { queue_id: queueId, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: { n } },
    { idempotencyKey: ikey('task') },
  );
  return r.task.id;
}

const getTask = (id: string) => client().getTask(id);

/** A handler that waits for its signal, then fails with code STOPPED; `started` lists its tasks. */
function stuckHandler(started: string[]) {
  return (e: TaskContext) =>
    new Promise((_resolve, reject) => {
      started.push(e.task.id);
      e.signal.addEventListener('abort', () => reject(new PermanentError('stopped by the close', { code: 'STOPPED' })), { once: true });
    });
}

describe('a close that times out', () => {
  it('sends the aborted handlers’ results on the open session before it closes; waiting attempts are dropped unstarted', async () => {
    const q = await newQueue();
    const started: string[] = [];
    const reports: ResultReport[] = [];
    const w = createWorker({ url: f.gw.url, token: f.t.token, queues: [q], capacity: 1, prefetch: 1, logger: silent, handlers: { h: stuckHandler(started) } });
    workers.push(w);
    w.on('result', (r) => reports.push(r));
    await w.ready;
    const running = await submit(q, 0);
    await waitFor('the first handler', () => started.length === 1);
    const waiting = await submit(q, 1);
    await waitFor('2 attempts held', () => w.inFlight === 2);
    const began = Date.now();
    await w.close({ timeoutMs: 300 });
    expect(Date.now() - began).toBeLessThan(5000);
    expect(reports).toEqual([{ attemptId: expect.any(String), outcome: 'failed', taskState: 'FAILED', deduplicated: false }]);
    expect(started).toEqual([running]);
    const t = await getTask(running);
    expect(t.state).toBe('FAILED');
    expect(t.result?.error?.code).toBe('STOPPED');
    // The waiting attempt was never started: its task is not failed and consumed no run of a handler.
    expect((await getTask(waiting)).state).not.toBe('FAILED');
  });

  it('a handler that rethrows its abort reason reports unknown: the task goes to NEEDS_REVIEW, not FAILED', async () => {
    const q = await newQueue();
    const started: string[] = [];
    const reports: ResultReport[] = [];
    const w = createWorker({
      url: f.gw.url,
      token: f.t.token,
      queues: [q],
      capacity: 1,
      logger: silent,
      handlers: {
        h: (e: TaskContext) =>
          new Promise((_resolve, reject) => {
            started.push(e.task.id);
            e.signal.addEventListener('abort', () => reject(e.signal.reason as Error), { once: true });
          }),
      },
    });
    workers.push(w);
    w.on('result', (r) => reports.push(r));
    await w.ready;
    const task = await submit(q, 0);
    await waitFor('the handler', () => started.length === 1);
    await w.close({ timeoutMs: 300 });
    // The SDK cannot know whether the aborted handler's effect happened.
    expect(reports).toEqual([{ attemptId: expect.any(String), outcome: 'unknown', taskState: 'NEEDS_REVIEW', deduplicated: false }]);
    const t = await getTask(task);
    expect(t.state).toBe('NEEDS_REVIEW');
    expect(t.result?.error?.code).toBe('UNKNOWN_OUTCOME');
  });

  it('with no session open, reports the result as not sent and returns without waiting for one', async () => {
    const q = await newQueue();
    const proxy = await startTcpProxy(Number(new URL(f.gw.url).port));
    proxies.push(proxy);
    const started: string[] = [];
    const reports: ResultReport[] = [];
    const w = createWorker({
      url: `http://127.0.0.1:${proxy.port}`,
      token: f.t.token,
      queues: [q],
      capacity: 1,
      logger: silent,
      reconnect: { initialDelayMs: 20_000, maxDelayMs: 20_000 },
      handlers: { h: stuckHandler(started) },
    });
    workers.push(w);
    w.on('result', (r) => reports.push(r));
    await w.ready;
    const task = await submit(q, 0);
    await waitFor('the handler', () => started.length === 1);
    proxy.switchTo(proxy.target); // cuts the open connection; the reconnect is 20 s away
    await waitFor('the worker to notice the drop', () => !w.connected);
    const began = Date.now();
    await w.close({ timeoutMs: 300 });
    expect(Date.now() - began).toBeLessThan(10_000);
    await sleep(20); // the report follows the handler's return
    expect(reports).toEqual([{ attemptId: expect.any(String), outcome: 'failed', error: RESULT_NOT_SENT }]);
    const t = await getTask(task);
    expect(t.state).toBe('RUNNING');
    expect(t.attempts_made).toBe(1);
  });
});
