import { describe, expect, it } from 'vitest';
import { useGatewayFixture } from './support/fixture.js';
import { call } from './support/http.js';
import { hello, openRaw } from './support/raw-worker.js';
import { submitTask } from './support/submit.js';

const f = useGatewayFixture();

const submit = (over: Record<string, unknown> = {}) => submitTask(f.gw.url, f.t, over);

describe('worker lifecycle over a raw socket', () => {
  it('hello → assign → start → result succeeded', async () => {
    const w = await openRaw(f.gw.url, f.t.token);
    w.send(hello([f.t.queue_id], { concurrency_keys: true }));
    const ok = await w.next('hello.ok');
    expect(ok.resumed).toEqual([]);
    expect(ok.lost).toEqual([]);
    const task = await submit({ concurrency_key: 'object/1' });
    const assign = await w.next('task.assign');
    expect(assign.task.id).toBe(task.id);
    expect(assign.concurrency_token).toBe('1');
    w.send({ type: 'start', attempt_id: assign.attempt_id });
    await w.next('start.ok');
    w.send({ type: 'result', attempt_id: assign.attempt_id, outcome: 'succeeded', output: { ok: true } });
    const res = await w.next('result.ok');
    expect(res).toEqual({ type: 'result.ok', attempt_id: assign.attempt_id, deduplicated: false, task_state: 'SUCCEEDED' });
    w.send({ type: 'result', attempt_id: assign.attempt_id, outcome: 'succeeded', output: { ok: true } });
    expect((await w.next('result.ok')).deduplicated).toBe(true);
    w.send({ type: 'result', attempt_id: assign.attempt_id, outcome: 'failed' });
    const conflict = await w.next('error');
    expect(conflict).toMatchObject({ code: 'STATE_CONFLICT', attempt_id: assign.attempt_id, fatal: false });
    const read = await call(f.gw.url, 'GET', `/v1/tasks/${task.id}`, { token: f.t.token });
    expect(read.body.data.task.state).toBe('SUCCEEDED');
    expect(read.body.data.task.result).toEqual({ outcome: 'succeeded', output: { ok: true } });
    const attempts = await call(f.gw.url, 'GET', `/v1/tasks/${task.id}/attempts`, { token: f.t.token });
    expect(attempts.body.data.attempts).toHaveLength(1);
    expect(attempts.body.data.attempts[0]).toMatchObject({ state: 'SUCCEEDED', concurrency_token: '1', outcome: 'succeeded' });
    w.close();
  });
});
