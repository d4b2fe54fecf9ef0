// "The node is still serving": the check every hostile-input and fault test ends with.
import { expect } from 'vitest';
import type { CredentialsFile } from '../../server/admin/bootstrap.js';
import type { GatewayProcess } from './gateway.js';
import { call } from './http.js';
import { hello, openRaw } from './raw-worker.js';
import { submitTask } from './submit.js';

/** The gateway survived: process alive, /healthz 200, a normal worker of `probe` (a tenant no
 * hostile client uses) gets a submitted task and finishes it, and nothing was logged as uncaught. */
export async function expectServing(gw: GatewayProcess, probe: CredentialsFile): Promise<void> {
  expect(gw.child.exitCode).toBeNull();
  expect(gw.child.signalCode).toBeNull();
  expect((await call(gw.url, 'GET', '/healthz')).status).toBe(200);
  const w = await openRaw(gw.url, probe.token);
  w.send(hello([probe.queue_id], { capacity: 1 }));
  await w.next('hello.ok');
  const task = await submitTask(gw.url, probe);
  const a = await w.next('task.assign');
  expect(a.task.id).toBe(task.id);
  w.send({ type: 'start', attempt_id: a.attempt_id });
  await w.next('start.ok');
  w.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded' });
  expect((await w.next('result.ok')).task_state).toBe('SUCCEEDED');
  w.close();
  await w.closed;
  expect(gw.output.filter((l) => /uncaught|unhandled|FATAL ERROR/i.test(l))).toEqual([]);
}
