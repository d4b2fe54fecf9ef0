// Shared helpers for the POST /v1/tasks contract tests (http-submit-fields.test.ts and
// http-submit-body.test.ts): submit calls and rejection checks that also assert nothing was stored.
// Each test file starts its own database and gateway.
import { expect } from 'vitest';
import type { TestDb } from './db.js';
import type { GatewayProcess } from './gateway.js';
import { call, ikey, type RawResponse } from './http.js';
import { expectData, expectError } from './contract.js';
import type { CredentialsFile } from '../../server/admin/bootstrap.js';
import { postTask } from './submit.js';

/** Helpers bound to a test file's database, gateway and tenant (read when called, so they can be
 * created before beforeAll has run). */
export function submitHelpers(env: () => { db: TestDb; gw: GatewayProcess; t: CredentialsFile }) {
  async function counts(): Promise<{ tasks: number; receipts: number }> {
    const { db } = env();
    const [[tr]] = (await db.pool.query('SELECT COUNT(*) AS n FROM tasks')) as any;
    const [[rr]] = (await db.pool.query('SELECT COUNT(*) AS n FROM receipts')) as any;
    return { tasks: Number(tr.n), receipts: Number(rr.n) };
  }

  const submit = (body: unknown, key = ikey(), token = env().t.token) => postTask(env().gw.url, token, body, key);
  const submitRaw = (rawBody: string | Buffer, key = ikey(), headers: Record<string, string> = {}) =>
    call(env().gw.url, 'POST', '/v1/tasks', { token: env().t.token, key, rawBody, headers });

  /** Asserts a 400 INVALID_ARGUMENT that names `field` (when given), stores nothing, and that the
   * key is still free afterwards. */
  async function rejected(res: Promise<RawResponse> | RawResponse, field?: string, status = 400, code = 'INVALID_ARGUMENT'): Promise<void> {
    const r = await res;
    const err = expectError(r, status, code);
    if (field !== undefined) expect(err.details?.field).toBe(field);
  }

  /** Sends `body` and expects rejection, checking that nothing was stored and the key stays usable. */
  async function rejectsBody(body: unknown, field?: string, status = 400, code = 'INVALID_ARGUMENT'): Promise<void> {
    const before = await counts();
    const key = ikey();
    await rejected(submit(body, key), field, status, code);
    expect(await counts()).toEqual(before);
    return void key;
  }

  async function accepted(body: unknown): Promise<any> {
    return expectData(await submit(body), 201).task;
  }

  return { counts, submit, submitRaw, rejected, rejectsBody, accepted };
}
