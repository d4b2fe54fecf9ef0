import { describe, expect, it } from 'vitest';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';

const f = useGatewayFixture();

const task = (over: Record<string, unknown> = {}) => ({
  queue_id: f.t.queue_id,
  handler: 'object.update',
  handler_version: 'v1',
  payload_version: 'v1',
  payload: { operation_ref: 'update-001', object_ref: 'objects/42' },
  concurrency_key: 'object/42',
  ...over,
});

describe('submit smoke', () => {
  it('accepts the spec example, replays it, and reads it back', async () => {
    const key = ikey();
    const first = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key, body: task() });
    expect(first.status).toBe(201);
    expect(first.headers.get('x-request-id')).toBe(first.body.request_id);
    expect(first.body.data.deduplicated).toBe(false);
    expect(first.body.data.task.state).toBe('WAITING');
    const again = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key, body: task() });
    expect(again.status).toBe(200);
    expect(again.body.data.deduplicated).toBe(true);
    expect(again.body.data.task).toEqual(first.body.data.task);
    const read = await call(f.gw.url, 'GET', `/v1/tasks/${first.body.data.task.id}`, { token: f.t.token });
    expect(read.status).toBe(200);
    expect(read.body.data.task).toEqual(first.body.data.task);
  });
});
