// What an operator sees: queue depth and oldest-waiting gauges, claim and
// commit histograms, one pino line per HTTP request (no bodies or tokens), task lifecycle at debug,
// a shutdown line, nothing but JSON on the gateway's output, and docs/operations.md naming every metric.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../server/paths.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { setTaskTime } from './support/waiting.js';
import { waitFor } from './support/wait.js';
import { tenantWorker } from './support/sdk-worker.js';

const f = useGatewayFixture({ gatewayEnv: { ORBIT_LOG_LEVEL: 'debug' } });

function metric(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

const records = () => f.gw.output.map((l) => JSON.parse(l) as Record<string, unknown>);

describe('metrics', () => {
  const taskIds: string[] = [];

  it("queue depth and the oldest due task's age, per queue", async () => {
    for (let i = 0; i < 3; i++) {
      const r = await call(f.gw.url, 'POST', '/v1/tasks', {
        token: f.t.token,
        key: ikey('obs'),
        body: { queue_id: f.t.queue_id, handler: 'object.update', handler_version: 'v1', payload_version: 'v1', payload: { secret_payload_field: 'p-4711' } },
      });
      expect(r.status).toBe(201);
      taskIds.push(r.body.data.task.id);
    }
    await setTaskTime(f.db.pool, taskIds[0]!, 'created_at', 'UTC_TIMESTAMP(3) - INTERVAL 120 SECOND');
    const labels = { queue_id: f.t.queue_id, queue: 'initial' };
    const text = await waitFor(
      'depth 3',
      async () => {
        const t = (await call(f.gw.url, 'GET', '/metrics')).text;
        return metric(t, 'orbit_queue_depth', labels) === 3 ? t : null;
      },
      10_000,
    );
    const age = metric(text, 'orbit_queue_oldest_waiting_seconds', labels)!;
    expect(age).toBeGreaterThanOrEqual(120);
    expect(age).toBeLessThan(180);
  });

  it('claim and commit histograms fill as a worker runs the tasks; depth goes back to 0', async () => {
    const w = tenantWorker(f, { 'object.update': () => ({ ok: true }) });
    await waitFor(
      'all SUCCEEDED',
      async () => {
        const r = await call(f.gw.url, 'GET', `/v1/tasks?queue_id=${f.t.queue_id}&state=SUCCEEDED`, { token: f.t.token });
        return r.body.data.tasks.length === 3;
      },
      15_000,
    );
    await w.close();
    const text = await waitFor(
      'no waiting tasks',
      async () => {
        const t = (await call(f.gw.url, 'GET', '/metrics')).text;
        return metric(t, 'orbit_queue_depth', { queue_id: f.t.queue_id }) === undefined ? t : null;
      },
      10_000,
    );
    expect(metric(text, 'orbit_claim_seconds_count')).toBeGreaterThan(0);
    expect(metric(text, 'orbit_commit_seconds_count', { op: 'frames' })).toBeGreaterThan(0);
    expect(metric(text, 'orbit_commit_seconds_count', { op: 'POST /v1/tasks' })).toBeGreaterThanOrEqual(3);
  });

  it('an HTTP command counts in orbit_command_batch_size, not in the frame batches', async () => {
    const before = (await call(f.gw.url, 'GET', '/metrics')).text;
    const r = await call(f.gw.url, 'POST', '/v1/queues', { token: f.t.token, key: ikey('obs-queue'), body: { name: `obs-${Date.now()}` } });
    expect(r.status).toBe(201);
    const after = (await call(f.gw.url, 'GET', '/metrics')).text;
    const count = (text: string, name: string) => metric(text, name) ?? 0;
    expect(count(after, 'orbit_command_batch_size_count')).toBeGreaterThan(count(before, 'orbit_command_batch_size_count'));
    expect(count(after, 'orbit_frame_batch_size_count')).toBe(count(before, 'orbit_frame_batch_size_count'));
    expect(metric(after, 'orbit_commit_seconds_count', { op: 'commands' })).toBeGreaterThan(0);
  });

  it('task lifecycle at debug: accepted, assigned, result, with ids', async () => {
    const r = records();
    for (const id of taskIds) {
      expect(r.some((x) => x.msg === 'task accepted' && x.task_id === id && x.level === 20)).toBe(true);
      expect(r.some((x) => x.msg === 'task assigned' && x.task_id === id && typeof x.attempt_id === 'string')).toBe(true);
    }
    expect(r.filter((x) => x.msg === 'task result' && x.outcome === 'succeeded' && x.task_state === 'SUCCEEDED')).toHaveLength(3);
  });
});

describe('logs', () => {
  it('one info line per request: method, route, status, duration, request_id — no bodies or tokens', async () => {
    const res = await call(f.gw.url, 'GET', `/v1/tasks/${'f'.repeat(32)}`, { token: f.t.token });
    expect(res.status).toBe(404);
    const id = res.headers.get('x-request-id')!;
    const line = await waitFor('request line', async () => records().find((x) => x.msg === 'request' && x.request_id === id), 5_000);
    expect(line).toMatchObject({ level: 30, method: 'GET', route: 'GET /v1/tasks/{id}', status: 404 });
    expect(typeof line.duration_ms).toBe('number');
    expect(records().filter((x) => x.msg === 'request' && x.route === 'POST /v1/tasks' && x.status === 201)).toHaveLength(3);
    const all = f.gw.output.join('\n');
    expect(all).not.toContain(f.t.token);
    expect(all).not.toContain('p-4711');
    expect(all.toLowerCase()).not.toContain('authorization');
  });

  it('everything the gateway prints is pino JSON, down to the shutdown lines', async () => {
    const code = await f.gw.stop();
    expect(code).toBe(0);
    for (const l of f.gw.output) expect(() => JSON.parse(l), l).not.toThrow();
    const msgs = records().map((x) => x.msg);
    expect(msgs).toEqual(expect.arrayContaining(['orbit gateway ready', 'orbit gateway shutting down', 'gateway stopped', 'orbit gateway exited']));
  });
});

describe('docs/operations.md', () => {
  it('lists /healthz, /readyz, /metrics and every orbit_ metric', async () => {
    const doc = fs.readFileSync(path.join(packageRoot(), 'docs/operations.md'), 'utf8');
    for (const p of ['/healthz', '/readyz', '/metrics']) expect(doc).toContain(`\`${p}\``);
    const { createMetrics, registerDbGauges } = await import('../server/metrics.js');
    const m = createMetrics();
    registerDbGauges(m, f.db.pool);
    const names = m.registry
      .getMetricsAsArray()
      .map((x) => x.name)
      .filter((n) => n.startsWith('orbit_'));
    expect(names.length).toBeGreaterThan(10);
    const missing = names.filter((n) => !doc.includes(`\`${n}\``) && !doc.includes(`\`${n}{`)); // `name` or `name{labels}`
    expect(missing).toEqual([]);
  });
});
