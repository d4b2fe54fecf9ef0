// Helpers for result-stream tests: fast event creation in SQL (finished tasks + the same append
// function the outcome transactions use), extra credentials, and subscription calls over raw HTTP.
import { expect } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { withTransaction, type Pool, type Tx } from '../../server/db/pool.js';
import { appendResultEvents, type EventType } from '../../server/dispatch/ledger.js';
import { insertCredential } from '../../server/db/credentials.js';
import { hashToken, newToken } from '../../server/admin/access.js';
import { newId } from '../../server/ids.js';
import type { CredentialsFile } from '../../server/admin/bootstrap.js';
import { call, ikey, type RawResponse } from './http.js';
import type { Subscription } from '@orbit/protocol/http-views';

const OUTCOME: Record<EventType, { state: string; outcome: string }> = {
  'task.succeeded': { state: 'SUCCEEDED', outcome: 'succeeded' },
  'task.failed': { state: 'FAILED', outcome: 'failed' },
  'task.cancelled': { state: 'CANCELLED', outcome: 'cancelled' },
  'task.deadline_exceeded': { state: 'DEADLINE_EXCEEDED', outcome: 'deadline_exceeded' },
  'task.needs_review': { state: 'NEEDS_REVIEW', outcome: 'unknown' },
};

/** Inserts `n` finished tasks in `queueId` and their result events (in batches of up to 1000 per
 * transaction, via appendResultEvents). Returns the sequences, ascending. */
export async function makeEvents(pool: Pool, t: CredentialsFile, queueId: string, n: number, type: EventType = 'task.succeeded'): Promise<string[]> {
  const out: string[] = [];
  const o = OUTCOME[type];
  for (let i = 0; i < n; i += 1000) {
    const k = Math.min(1000, n - i);
    const ids = Array.from({ length: k }, () => newId());
    const seqs = await withTransaction(pool, async (c) => {
      await c.query(
        `INSERT INTO tasks (id, namespace_id, application_id, queue_id, handler, handler_version, payload_version, payload, priority, state,
           attempts_made, attempts_created, max_attempts, deadline_at, created_at, updated_at, finished_at, result_outcome)
         VALUES ${ids.map(() => "(?, ?, ?, ?, 'h', 'v1', 'v1', '{}', 0, ?, 1, 1, 3, UTC_TIMESTAMP(3) + INTERVAL 1 DAY, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), ?)").join(', ')}`,
        ids.flatMap((id) => [id, t.namespace_id, t.application_id, queueId, o.state, o.outcome]),
      );
      await appendResultEvents(
        c,
        ids.map((id) => ({ namespaceId: t.namespace_id, type, taskId: id, queueId, result: { outcome: o.outcome } })),
      );
      return sequencesOf(c, t.namespace_id, ids);
    });
    out.push(...seqs);
  }
  return out;
}

/** The sequences of the events of `taskIds`, ascending (read in the appending transaction). */
export async function sequencesOf(c: Tx, namespaceId: string, taskIds: string[]): Promise<string[]> {
  const [rows] = await c.query<RowDataPacket[]>('SELECT sequence FROM result_events WHERE namespace_id = ? AND task_id IN (?) ORDER BY sequence', [
    namespaceId,
    taskIds,
  ]);
  return rows.map((r) => String(r.sequence));
}

/** A new credential in `t`'s namespace. */
export async function extraCredential(
  pool: Pool,
  t: CredentialsFile,
  scopes: string[],
  queueIds: '*' | string[] = '*',
): Promise<{ id: string; token: string }> {
  const token = newToken();
  const id = newId();
  await insertCredential(pool, { id, namespaceId: t.namespace_id, name: 'test extra', tokenHash: hashToken(token), scopes, queueIds });
  return { id, token };
}

/** POST /v1/subscriptions with `body` as `token` under `key`; any status. */
export function postSub(url: string, token: string, body: Record<string, unknown>, key: string = ikey('s')): Promise<RawResponse> {
  return call(url, 'POST', '/v1/subscriptions', { token, key, body });
}

/** postSub, expecting 201; returns the subscription. */
export async function createSub(url: string, token: string, body: Record<string, unknown>): Promise<Subscription> {
  const r = await postSub(url, token, body);
  expect(r.status, r.text).toBe(201);
  return r.body.data.subscription;
}

export async function lease(url: string, token: string, subId: string, max = 100, leaseSeconds = 30): Promise<any[]> {
  const r = await call(url, 'POST', `/v1/subscriptions/${subId}/deliveries:lease`, { token, body: { max, lease_seconds: leaseSeconds } });
  expect(r.status, r.text).toBe(200);
  return r.body.data.deliveries;
}

export async function ack(url: string, token: string, subId: string, ids: string[]): Promise<number> {
  const r = await call(url, 'POST', `/v1/subscriptions/${subId}/deliveries:ack`, { token, body: { delivery_ids: ids } });
  expect(r.status, r.text).toBe(200);
  return r.body.data.acked;
}

export async function getSub(url: string, token: string, subId: string): Promise<Subscription> {
  const r = await call(url, 'GET', `/v1/subscriptions/${subId}`, { token });
  expect(r.status, r.text).toBe(200);
  return r.body.data.subscription;
}

export const ALL_TYPES: EventType[] = ['task.succeeded', 'task.failed', 'task.cancelled', 'task.deadline_exceeded', 'task.needs_review'];
