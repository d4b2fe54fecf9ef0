import { OrbitError } from '@orbit/protocol/errors';
import { SubmitTaskBody } from '@orbit/protocol/http-schemas';
import { businessKeyProblem, concurrencyKeyProblem, parseRfc3339, ID_RE } from '@orbit/protocol/validation';
import { getQueue } from '../db/queues.js';
import { insertTask, insertedTaskRow, getTask, listTasks, taskView, type TaskRow } from '../db/tasks.js';
import { reserveUnfinishedTask } from '../db/applications.js';
import { fromIso } from '../db/pool.js';
import { newId } from '../ids.js';
import { requireQueueAccess, requireScope } from './auth.js';
import { notOneOf, queueNotFound, unfinishedTasksQuota } from './hints.js';
import { idempotencyKey, readBody, rejectQuery, runCommand } from './command.js';
import type { Reply, RequestCtx } from './context.js';
import { encodeCursor, listQuery } from './list-query.js';

export const MAX_PAYLOAD_BYTES = 256 * 1024;
const STATES = ['WAITING', 'LEASED', 'RUNNING', 'NEEDS_REVIEW', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'DEADLINE_EXCEEDED'];

/**
 * JSON numbers are parsed into doubles, so an integer beyond 2^53 (a 64-bit id, say) would be
 * stored silently changed (12345678901234567890 → 12345678901234567000). Such a payload is
 * refused instead; the caller sends the value as a string. Returns the path of the first one.
 */
function lossyNumberPath(v: unknown, path: string): string | null {
  if (typeof v === 'number') return Math.abs(v) > Number.MAX_SAFE_INTEGER ? path : null;
  if (v === null || typeof v !== 'object') return null;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const p = lossyNumberPath(v[i], `${path}.${i}`);
      if (p) return p;
    }
    return null;
  }
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    const p = lossyNumberPath(x, `${path}.${k}`);
    if (p) return p;
  }
  return null;
}

/** Field rules beyond the schema; returns the normalized command (defaults applied, "" key dropped). */
function normalizeSubmit(b: SubmitTaskBody) {
  const payloadJson = JSON.stringify(b.payload);
  if (Buffer.byteLength(payloadJson) > MAX_PAYLOAD_BYTES) {
    throw new OrbitError('PAYLOAD_TOO_LARGE', `payload: serialized over ${MAX_PAYLOAD_BYTES} bytes`, { field: 'payload' });
  }
  const lossy = lossyNumberPath(b.payload, 'payload');
  if (lossy) {
    throw new OrbitError('INVALID_ARGUMENT', `${lossy}: number beyond ±2^53 would lose precision; send it as a string`, { field: lossy });
  }
  if (b.business_key !== undefined) {
    const p = businessKeyProblem(b.business_key);
    if (p) throw new OrbitError('INVALID_ARGUMENT', `business_key: ${p}`, { field: 'business_key' });
  }
  const key = b.concurrency_key === '' ? undefined : b.concurrency_key;
  if (key !== undefined) {
    const p = concurrencyKeyProblem(key);
    if (p) throw new OrbitError('INVALID_ARGUMENT', `concurrency_key: ${p}`, { field: 'concurrency_key' });
  }
  let notBeforeMs: number | undefined;
  if (b.not_before !== undefined) {
    const t = parseRfc3339(b.not_before);
    if (t === null) throw new OrbitError('INVALID_ARGUMENT', 'not_before: must be an RFC 3339 timestamp', { field: 'not_before' });
    notBeforeMs = t;
  }
  return {
    normalized: {
      queue_id: b.queue_id,
      handler: b.handler,
      handler_version: b.handler_version,
      payload_version: b.payload_version,
      payload: b.payload,
      business_key: b.business_key,
      concurrency_key: key,
      priority: b.priority ?? 0,
      max_attempts: b.max_attempts,
      deadline_seconds: b.deadline_seconds ?? 86400,
      not_before: notBeforeMs === undefined ? undefined : new Date(notBeforeMs).toISOString(),
    },
    payloadJson,
    notBeforeMs,
  };
}

export async function submitTask(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'tasks:submit');
  rejectQuery(ctx);
  const key = idempotencyKey(ctx);
  const body = await readBody(ctx, SubmitTaskBody);
  const { normalized: n, payloadJson, notBeforeMs } = normalizeSubmit(body);
  const cred = ctx.cred;
  // Queue authorization before the receipt lookup, so that a replay never hands a task of a queue
  // outside queue_ids to a limited credential (404 when the queue is not in the namespace at all).
  const outsideQueueIds = cred.queueIds !== '*' && !cred.queueIds.includes(n.queue_id);
  const pre = (outsideQueueIds || n.max_attempts === undefined) && ID_RE.test(n.queue_id) ? await getQueue(ctx.app.pool, cred.namespaceId, n.queue_id) : null;
  if (outsideQueueIds) {
    if (!pre) throw await queueNotFound(ctx.app.pool, cred.namespaceId, n.queue_id);
    requireQueueAccess(cred, pre.id);
  }
  // max_attempts defaults to the queue's retry.max_attempts: apply it before fingerprinting, so that
  // writing the default out is the same command as omitting it. (Queues have no endpoint that
  // changes their retry policy; if one is added, an omitted max_attempts replayed after a change
  // would no longer match its receipt.)
  if (n.max_attempts === undefined && pre) n.max_attempts = pre.retry_max_attempts;
  return runCommand(ctx, key, {
    operation: 'POST /v1/tasks',
    targetId: '',
    normalized: n,
    status: 201,
    effect: async (c) => {
      // Shared lock on the queue row: serialized with retirement (which takes it exclusively).
      const q = await getQueue(c, cred.namespaceId, n.queue_id, 'share');
      if (!q) throw await queueNotFound(c, cred.namespaceId, n.queue_id);
      requireQueueAccess(cred, q.id);
      if (q.retired_at) throw new OrbitError('RESOURCE_RETIRED', 'queue is retired', { field: 'queue_id' });
      const [[{ now }]] = (await c.query('SELECT UTC_TIMESTAMP(3) AS now')) as unknown as [[{ now: string }]];
      const nowMs = Date.parse(now.replace(' ', 'T') + 'Z');
      if (notBeforeMs !== undefined && notBeforeMs > nowMs + n.deadline_seconds * 1000) {
        throw new OrbitError('INVALID_ARGUMENT', 'not_before: must not be after the deadline', { field: 'not_before' });
      }
      if (!(await reserveUnfinishedTask(c, cred.applicationId))) {
        throw await unfinishedTasksQuota(c, cred.applicationId);
      }
      const id = newId();
      const fields = {
        id,
        namespaceId: cred.namespaceId,
        applicationId: cred.applicationId,
        queueId: q.id,
        handler: n.handler,
        handlerVersion: n.handler_version,
        payloadVersion: n.payload_version,
        payloadJson,
        businessKey: n.business_key ?? null,
        concurrencyKey: n.concurrency_key === undefined ? null : Buffer.from(n.concurrency_key, 'utf8'),
        priority: n.priority,
        maxAttempts: n.max_attempts ?? q.retry_max_attempts,
        notBefore: n.not_before === undefined ? null : fromIso(n.not_before),
        createdAt: now.length === 19 ? `${now}.000` : now,
        deadlineAt: fromIso(new Date(nowMs + n.deadline_seconds * 1000).toISOString()),
      };
      await insertTask(c, fields);
      return { data: { task: taskView(insertedTaskRow(fields)) }, resourceId: id };
    },
    afterCommit: (d) => {
      ctx.log.debug({ task_id: (d.task as { id: string }).id, queue_id: n.queue_id }, 'task accepted');
      ctx.app.metrics.tasksAccepted.inc();
      ctx.app.events.emit('work', n.queue_id);
    },
  });
}

/** Loads a task of the credential's namespace; 404 outside it, 403 outside queue_ids. */
export async function loadTask(ctx: RequestCtx, id: string): Promise<TaskRow> {
  const row = ID_RE.test(id) ? await getTask(ctx.app.pool, ctx.cred.namespaceId, id) : null;
  if (!row) throw new OrbitError('NOT_FOUND', 'task not found');
  requireQueueAccess(ctx.cred, row.queue_id);
  return row;
}

export async function getTaskRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'tasks:read');
  return { status: 200, data: { task: taskView(await loadTask(ctx, ctx.params.id!)) } };
}

const LIST_PARAMS = new Set(['queue_id', 'state', 'concurrency_key', 'business_key', 'limit', 'cursor']);

export async function listTasksRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'tasks:read');
  const { one, limit, after: beforeSeq } = listQuery(ctx, LIST_PARAMS, 's', '[1-9][0-9]{0,19}');
  const state = one('state');
  if (state !== undefined && !STATES.includes(state)) throw notOneOf('state', state, STATES);
  const queueId = one('queue_id');
  if (queueId !== undefined) {
    const queue = ID_RE.test(queueId) ? await getQueue(ctx.app.pool, ctx.cred.namespaceId, queueId) : null;
    if (!queue) throw await queueNotFound(ctx.app.pool, ctx.cred.namespaceId, queueId);
    requireQueueAccess(ctx.cred, queueId);
  }
  const key = one('concurrency_key');
  if (key !== undefined && concurrencyKeyProblem(key)) throw new OrbitError('INVALID_ARGUMENT', 'concurrency_key: invalid', { field: 'concurrency_key' });
  const rows = await listTasks(ctx.app.pool, {
    namespaceId: ctx.cred.namespaceId,
    queueIds: ctx.cred.queueIds,
    queueId,
    state,
    concurrencyKey: key === undefined || key === '' ? undefined : Buffer.from(key, 'utf8'),
    businessKey: one('business_key'),
    beforeSeq,
    limit,
  });
  const page = rows.slice(0, limit);
  const next = rows.length > limit ? encodeCursor('s', String(page[page.length - 1]!.seq)) : null;
  return { status: 200, data: { tasks: page.map((r) => taskView(r, true)), next_cursor: next } };
}
