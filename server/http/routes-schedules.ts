// /v1/schedules (schedules.md): receipt-bearing commands (create, publish, pause, resume, retire,
// trigger) and reads. Every body is validated completely — schema, then the version's calendar and
// task template, then the queue (404 / 403 before any receipt, as submit does) — before the command
// transaction starts, so bad input changes nothing.
import { OrbitError } from '@orbit/protocol/errors';
import { CreateScheduleBody, PublishVersionBody, RetireBody, RevisionBody, TriggerScheduleBody, type ScheduleVersionInput } from '@orbit/protocol/http-schemas';
import { parseRfc3339 } from '@orbit/protocol/validation';
import { getQueue } from '../db/queues.js';
import { getSchedule, listSchedules, scheduleView, type ScheduleRow } from '../db/schedules.js';
import { getVersion, listVersions, versionView } from '../db/schedule-versions.js';
import { fireView, listFires } from '../db/schedule-fires.js';
import { createSchedule, publishVersion, retireSchedule, setPaused, triggerSchedule, withTemplate, type StoredVersion } from '../schedules/commands.js';
import { normalizeVersion } from '../schedules/version-input.js';
import { dbMs, msDb } from '../schedules/versions.js';
import { requireAnyScope, requireQueueAccess, requireScope } from './auth.js';
import { idempotencyKey, readBody, rejectQuery, runCommand } from './command.js';
import type { Reply, RequestCtx } from './context.js';
import { encodeCursor, listQuery } from './list-query.js';

/** The version normalized, its queue checked (404 absent, 403 outside queue_ids) and its
 * max_attempts default resolved from the queue (so the default written out is the same command). */
async function storedVersion(ctx: RequestCtx, v: ScheduleVersionInput): Promise<StoredVersion> {
  const n = normalizeVersion(v);
  const q = await getQueue(ctx.app.pool, ctx.cred.namespaceId, n.task.queue_id);
  if (!q) throw new OrbitError('NOT_FOUND', 'queue not found', { field: 'version.task.queue_id' });
  requireQueueAccess(ctx.cred, q.id);
  return withTemplate(n, q.retry_max_attempts);
}

/** A schedule of the credential's namespace: 404 absent, 403 when its queue is outside queue_ids. */
async function loadSchedule(ctx: RequestCtx): Promise<ScheduleRow> {
  const s = await getSchedule(ctx.app.pool, ctx.cred.namespaceId, ctx.params.id!);
  if (!s) throw new OrbitError('NOT_FOUND', 'schedule not found');
  requireQueueAccess(ctx.cred, s.queue_id);
  return s;
}

function wake(ctx: RequestCtx) {
  return () => ctx.app.signals.schedulesChanged();
}

export async function createScheduleRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'schedules:manage');
  rejectQuery(ctx);
  const key = idempotencyKey(ctx);
  const b = await readBody(ctx, CreateScheduleBody);
  const n = { name: b.name, paused: b.paused ?? false, version: await storedVersion(ctx, b.version) };
  const cred = ctx.cred;
  return runCommand(ctx, key, {
    operation: 'POST /v1/schedules',
    targetId: '',
    normalized: n,
    status: 201,
    effect: (c) => createSchedule(c, cred, n),
    afterCommit: wake(ctx),
  });
}

export async function publishVersionRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'schedules:manage');
  rejectQuery(ctx);
  const key = idempotencyKey(ctx);
  const b = await readBody(ctx, PublishVersionBody);
  const id = ctx.params.id!;
  await loadSchedule(ctx);
  const n = { expected_revision: b.expected_revision, version: await storedVersion(ctx, b.version) };
  const cred = ctx.cred;
  return runCommand(ctx, key, {
    operation: 'POST /v1/schedules/{id}/versions',
    targetId: id,
    normalized: n,
    status: 201,
    effect: (c) => publishVersion(c, cred, id, n),
    afterCommit: wake(ctx),
  });
}

function pauseOrResume(paused: boolean) {
  return async (ctx: RequestCtx): Promise<Reply> => {
    requireScope(ctx.cred, 'schedules:manage');
    rejectQuery(ctx);
    const key = idempotencyKey(ctx);
    const b = await readBody(ctx, RevisionBody);
    const id = ctx.params.id!;
    await loadSchedule(ctx);
    const cred = ctx.cred;
    return runCommand(ctx, key, {
      operation: `POST /v1/schedules/{id}:${paused ? 'pause' : 'resume'}`,
      targetId: id,
      normalized: b,
      status: 200,
      effect: (c) => setPaused(c, cred, id, paused, b.expected_revision),
      afterCommit: wake(ctx),
    });
  };
}
export const pauseScheduleRoute = pauseOrResume(true);
export const resumeScheduleRoute = pauseOrResume(false);

export async function retireScheduleRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'schedules:manage');
  rejectQuery(ctx);
  const key = idempotencyKey(ctx);
  const b = await readBody(ctx, RetireBody);
  const id = ctx.params.id!;
  await loadSchedule(ctx);
  const cred = ctx.cred;
  return runCommand(ctx, key, {
    operation: 'POST /v1/schedules/{id}:retire',
    targetId: id,
    normalized: b,
    status: 200,
    effect: (c) => retireSchedule(c, cred, id, b),
  });
}

export async function triggerScheduleRoute(ctx: RequestCtx): Promise<Reply> {
  requireScope(ctx.cred, 'schedules:manage');
  rejectQuery(ctx);
  const key = idempotencyKey(ctx);
  const b = await readBody(ctx, TriggerScheduleBody);
  let scheduledFor: string | undefined;
  if (b.scheduled_for !== undefined) {
    const t = parseRfc3339(b.scheduled_for);
    if (t === null) throw new OrbitError('INVALID_ARGUMENT', 'scheduled_for: must be an RFC 3339 timestamp', { field: 'scheduled_for' });
    if (t < Date.UTC(1970, 0, 2) || t >= Date.UTC(9999, 0, 1)) throw new OrbitError('INVALID_ARGUMENT', 'scheduled_for: out of range', { field: 'scheduled_for' });
    scheduledFor = new Date(t).toISOString();
  }
  const id = ctx.params.id!;
  await loadSchedule(ctx);
  const cred = ctx.cred;
  let after: (() => void) | undefined;
  return runCommand(ctx, key, {
    operation: 'POST /v1/schedules/{id}:trigger',
    targetId: id,
    normalized: { scheduled_for: scheduledFor },
    status: 201,
    effect: async (c) => {
      const r = await triggerSchedule(ctx.app, c, cred, id, scheduledFor);
      after = r.afterCommit;
      return { data: r.data, resourceId: r.resourceId };
    },
    afterCommit: () => after?.(),
  });
}

// ---- reads: schedules:manage or tasks:read ----

const READ_SCOPES = ['schedules:manage', 'tasks:read'] as const;

function noQuery(ctx: RequestCtx): void {
  if ([...ctx.url.searchParams.keys()].length > 0) throw new OrbitError('INVALID_ARGUMENT', 'this endpoint takes no query parameters', { field: 'query' });
}

export async function getScheduleRoute(ctx: RequestCtx): Promise<Reply> {
  requireAnyScope(ctx.cred, [...READ_SCOPES]);
  noQuery(ctx);
  return { status: 200, data: { schedule: scheduleView(await loadSchedule(ctx)) } };
}

export async function listSchedulesRoute(ctx: RequestCtx): Promise<Reply> {
  requireAnyScope(ctx.cred, [...READ_SCOPES]);
  const { limit, after } = listQuery(ctx, new Set(['limit', 'cursor']), 'n', '[a-z0-9._-]{1,64}');
  const rows = await listSchedules(ctx.app.pool, ctx.cred.namespaceId, ctx.cred.queueIds, after, limit);
  const page = rows.slice(0, limit);
  const next = rows.length > limit ? encodeCursor('n', page[page.length - 1]!.name) : null;
  return { status: 200, data: { schedules: page.map(scheduleView), next_cursor: next } };
}

export async function listVersionsRoute(ctx: RequestCtx): Promise<Reply> {
  requireAnyScope(ctx.cred, [...READ_SCOPES]);
  noQuery(ctx);
  const s = await loadSchedule(ctx);
  return { status: 200, data: { versions: (await listVersions(ctx.app.pool, s.id)).map(versionView) } };
}

export async function getVersionRoute(ctx: RequestCtx): Promise<Reply> {
  requireAnyScope(ctx.cred, [...READ_SCOPES]);
  noQuery(ctx);
  const s = await loadSchedule(ctx);
  const raw = ctx.params.n!;
  // A malformed number can never name a version: 404 like a malformed id.
  const row = /^[1-9][0-9]{0,8}$/.test(raw) ? await getVersion(ctx.app.pool, s.id, Number(raw)) : null;
  if (!row) throw new OrbitError('NOT_FOUND', 'version not found');
  return { status: 200, data: { version: versionView(row) } };
}

export async function listFiresRoute(ctx: RequestCtx): Promise<Reply> {
  requireAnyScope(ctx.cred, [...READ_SCOPES]);
  const { limit, after } = listQuery(ctx, new Set(['limit', 'cursor']), 'f', '[0-9]{1,15}');
  const s = await loadSchedule(ctx);
  const rows = await listFires(ctx.app.pool, s.id, after === undefined ? undefined : msDb(Number(after)), limit);
  const page = rows.slice(0, limit);
  const next = rows.length > limit ? encodeCursor('f', String(dbMs(page[page.length - 1]!.scheduled_for))) : null;
  return { status: 200, data: { fires: page.map(fireView), next_cursor: next } };
}
