// The SDK end to end against a real gateway process: HTTP client submits, a createWorker worker
// runs the handler through the fenced resource, the attempts API shows the same token, close()
// drains and closes the session normally.
import { describe, expect, it } from 'vitest';
import { useGatewayFixture } from './support/fixture.js';
import { createClient, createWorker, RetryableError, type TaskContext } from '../worker-sdk/index.js';
import { createFencedResource } from '../worker-sdk/fenced-resource.js';
import { waitFor } from './support/wait.js';
import { silent } from './support/sdk-worker.js';

const f = useGatewayFixture();

describe('SDK against a real gateway', () => {
  it('submit → worker (fenced write) → SUCCEEDED; tokens match; retry then success; close drains', async () => {
    const client = createClient({ url: f.gw.url, token: f.t.token });
    const fence = createFencedResource(f.db.pool, { table: 'e2e_fence' });
    await fence.ensureSchema();
    const seen: { attemptId: string; token?: bigint }[] = [];
    let failOnce = true;
    const w = createWorker({
      url: f.gw.url,
      token: f.t.token,
      queues: [f.t.queue_id],
      capacity: 2,
      logger: silent,
      handlers: {
        'object.update': {
          versions: ['v1'],
          fn: async (e: TaskContext<{ op: string }>) => {
            seen.push({ attemptId: e.attemptId, token: e.concurrencyToken });
            if (failOnce) {
              failOnce = false;
              throw new RetryableError('first try fails', { retryAfterMs: 0 });
            }
            const r = await fence.write({
              namespace: f.t.namespace_id,
              key: e.task.concurrencyKey!,
              token: e.concurrencyToken!,
              operationId: e.task.payload.op,
              apply: async () => {},
            });
            return { applied: r.applied };
          },
        },
      },
    });
    await w.ready;
    const sub = await client.submitTask(
      {
        queue_id: f.t.queue_id,
        handler: 'object.update',
        handler_version: 'v1',
        payload_version: 'v1',
        payload: { op: 'op-1' },
        concurrency_key: 'object/e2e',
        max_attempts: 3,
      },
      { idempotencyKey: `e2e-${Date.now()}` },
    );
    expect(sub.deduplicated).toBe(false);
    const done = await waitFor(
      'the task SUCCEEDED',
      async () => {
        const task = await client.getTask(sub.task.id);
        return task.state === 'SUCCEEDED' ? task : undefined;
      },
      15_000,
    );
    expect(done.result).toMatchObject({ outcome: 'succeeded', output: { applied: true } });
    const attempts = await client.getTaskAttempts(sub.task.id);
    expect(attempts.map((a) => a.outcome)).toEqual(['retry', 'succeeded']);
    // The handler saw exactly the tokens the platform recorded, as bigints, strictly increasing.
    expect(seen.map((s) => s.attemptId)).toEqual(attempts.map((a) => a.id));
    expect(seen.map((s) => s.token)).toEqual(attempts.map((a) => BigInt(a.concurrency_token!)));
    expect(seen[1]!.token! > seen[0]!.token!).toBe(true);
    expect(await fence.highestToken(f.t.namespace_id, 'object/e2e')).toBe(seen[1]!.token);
    // close() drains: it resolves (no time bound here: the SDK's drain has its own fallback), the
    // session is closed normally (1000) and nothing is left held.
    await w.close();
    const sessions = async () =>
      (
        (await f.db.pool.query(
          "SELECT state, close_code, (SELECT COUNT(*) FROM attempts a WHERE a.session_id = s.id AND a.state IN ('LEASED','RUNNING')) AS live FROM worker_sessions s WHERE namespace_id = ?",
          [f.t.namespace_id],
        )) as any
      )[0].map((r: any) => ({ state: r.state, close_code: r.close_code, live: Number(r.live) }));
    await waitFor('the session row closed', async () => (await sessions()).every((r: any) => r.state === 'CLOSED'), { timeout: 10_000 });
    expect(await sessions()).toEqual([{ state: 'CLOSED', close_code: 1000, live: 0 }]);
  });
});
