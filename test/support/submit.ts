// The one way the tests submit a single task over HTTP: POST /v1/tasks with a fresh
// Idempotency-Key, expecting 201 and returning the task. Suites that want other defaults wrap it
// (dispatch-fixture's submit, keys-helpers' payload {}, serving's submitNoop); bulk submission
// with retries is support/bulk.ts.
import { expect } from 'vitest';
import type { Task } from '@orbit/protocol/http-views';
import { call, ikey } from './http.js';

/** Submits one task as `tenant`: handler h@v1, payload {n: 1}, on `tenant.queue_id`; `over` replaces
 * any field (queue_id too). Expects 201; returns the task. */
export async function submitTask(
  url: string,
  tenant: { token: string; queue_id: string },
  over: Record<string, unknown> = {},
  key: string = ikey(),
): Promise<Task> {
  const body = { queue_id: tenant.queue_id, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: { n: 1 }, ...over };
  const r = await call(url, 'POST', '/v1/tasks', { token: tenant.token, key, body });
  expect(r.status, r.text).toBe(201);
  return r.body.data.task;
}
