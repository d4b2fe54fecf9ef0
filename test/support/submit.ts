// The one way the tests submit tasks over HTTP. `postTask` sends POST /v1/tasks and returns the raw
// response (for tests whose subject is a refusal or a replay); `submitTask` expects 201 and returns
// the task. The defaults (handler h@v1, payload {n: 1}, the tenant's queue) are overridden per
// call; dispatch-fixture's `submit(f, queueId)` only binds a file's gateway. Bulk submission with
// retries is support/bulk.ts.
import { expect } from 'vitest';
import type { Task } from '@orbit/protocol/http-views';
import { call, ikey, type RawResponse } from './http.js';

/** The default submit body on `queueId`; `over` replaces any field. */
export function defaultTaskBody(queueId: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { queue_id: queueId, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: { n: 1 }, ...over };
}

/** POST /v1/tasks with `body` as `token` under `key` (null: no Idempotency-Key); any status. */
export function postTask(url: string, token: string, body: unknown, key: string | null = ikey('task')): Promise<RawResponse> {
  return call(url, 'POST', '/v1/tasks', { token, key: key ?? undefined, body });
}

/** Submits one task as `tenant`: defaultTaskBody on `tenant.queue_id`, `over` replaces any field
 * (queue_id too). Expects 201; returns the task. */
export async function submitTask(
  url: string,
  tenant: { token: string; queue_id: string },
  over: Record<string, unknown> = {},
  key: string = ikey(),
): Promise<Task> {
  const r = await postTask(url, tenant.token, defaultTaskBody(tenant.queue_id, over), key);
  expect(r.status, r.text).toBe(201);
  return r.body.data.task;
}
