// /v1/schedules. Every body is validated completely before the command transaction starts, so bad
// input changes nothing.
import { OrbitError } from '@orbit/protocol/errors';
import { CreateScheduleBody, PublishVersionBody, RetireBody, RevisionBody, TriggerScheduleBody, type ScheduleVersionInput } from '@orbit/protocol/http-schemas';
import { parseRfc3339 } from '@orbit/protocol/validation';
import { getSchedule, listSchedules, scheduleView } from '../db/schedules.js';
import { getVersion, listVersions, versionView } from '../db/schedule-versions.js';
import { fireView, listFires } from '../db/schedule-fires.js';
import { createSchedule, publishVersion, retireSchedule, setPaused, triggerSchedule, withTemplate, type StoredVersion } from '../schedules/commands.js';
import { normalizeVersion } from '../schedules/version-input.js';
import { dbMs, msDb } from '../schedules/versions.js';
import { namedQueue, pathResource } from './hints.js';
import { command, commandsOn, scopedRoute } from './command.js';
import type { RequestCtx } from './context.js';
import { asIs, pageByName, pathVersion } from './definition-routes.js';
import { listQuery, noQuery } from './list-query.js';

/** The max_attempts default is resolved here, so the default written out is the same command. */
async function storedVersion(ctx: RequestCtx, v: ScheduleVersionInput): Promise<StoredVersion> {
  const n = normalizeVersion(v);
  const q = await namedQueue(ctx, n.task.queue_id, 'version.task.queue_id');
  return withTemplate(n, q.retry_max_attempts);
}

const loadSchedule = (ctx: RequestCtx) => pathResource(ctx, 'schedule', getSchedule, (s) => s.queue_id);

/** The scheduler re-reads its next fire times after a commit that may have moved them. */
function wake(_result: unknown, ctx: RequestCtx): void {
  ctx.app.signals.schedulesChanged();
}

export const createScheduleRoute = command({
  operation: 'POST /v1/schedules',
  scope: 'schedules:manage',
  body: CreateScheduleBody,
  status: 201,
  load: async (ctx, b) => ({ name: b.name, paused: b.paused ?? false, version: await storedVersion(ctx, b.version) }),
  effect: (c, n, { cred }) => createSchedule(c, cred, n),
  reply: asIs,
  afterCommit: wake,
});

export const publishVersionRoute = command({
  operation: 'POST /v1/schedules/{id}/versions',
  scope: 'schedules:manage',
  body: PublishVersionBody,
  status: 201,
  load: async (ctx, b) => {
    await loadSchedule(ctx);
    return { expected_revision: b.expected_revision, version: await storedVersion(ctx, b.version) };
  },
  effect: (c, n, { cred, params }) => publishVersion(c, cred, params.id!, n),
  reply: asIs,
  afterCommit: wake,
});

const onSchedule = commandsOn({ path: '/v1/schedules', scope: 'schedules:manage', load: loadSchedule, reply: asIs });
const pauseOrResume = (paused: boolean) =>
  onSchedule(paused ? 'pause' : 'resume', RevisionBody, (c, b, { cred, params }) => setPaused(c, cred, params.id!, paused, b.expected_revision), wake);
export const pauseScheduleRoute = pauseOrResume(true);
export const resumeScheduleRoute = pauseOrResume(false);
export const retireScheduleRoute = onSchedule('retire', RetireBody, (c, b, { cred, params }) => retireSchedule(c, cred, params.id!, b));

export const triggerScheduleRoute = command({
  operation: 'POST /v1/schedules/{id}:trigger',
  scope: 'schedules:manage',
  body: TriggerScheduleBody,
  status: 201,
  load: async (ctx, b) => {
    // The timestamp is checked before the schedule is looked up: a bad one is 400 even for an
    // unknown schedule.
    let scheduledFor: string | undefined;
    if (b.scheduled_for !== undefined) {
      const t = parseRfc3339(b.scheduled_for);
      if (t === null) throw new OrbitError('INVALID_ARGUMENT', 'scheduled_for: must be an RFC 3339 timestamp', { field: 'scheduled_for' });
      if (t < Date.UTC(1970, 0, 2) || t >= Date.UTC(9999, 0, 1))
        throw new OrbitError('INVALID_ARGUMENT', 'scheduled_for: out of range', { field: 'scheduled_for' });
      scheduledFor = new Date(t).toISOString();
    }
    await loadSchedule(ctx);
    return { scheduled_for: scheduledFor };
  },
  effect: (c, n, { app, cred, params }) => triggerSchedule(app, c, cred, params.id!, n.scheduled_for),
  reply: asIs,
  afterCommit: (r) => r.afterCommit(),
});

// ---- reads: schedules:manage or tasks:read ----

const READ_SCOPES = ['schedules:manage', 'tasks:read'] as const;

export const getScheduleRoute = scopedRoute(READ_SCOPES, async (ctx) => {
  noQuery(ctx);
  return { schedule: scheduleView(await loadSchedule(ctx)) };
});

export const listSchedulesRoute = scopedRoute(READ_SCOPES, async (ctx) => {
  const { page, next_cursor } = await pageByName(ctx, (after, limit) => listSchedules(ctx.app.pool, ctx.cred.namespaceId, ctx.cred.queueIds, after, limit));
  return { schedules: page.map(scheduleView), next_cursor };
});

export const listVersionsRoute = scopedRoute(READ_SCOPES, async (ctx) => {
  noQuery(ctx);
  const s = await loadSchedule(ctx);
  return { versions: (await listVersions(ctx.app.pool, s.id)).map(versionView) };
});

export const getVersionRoute = scopedRoute(READ_SCOPES, async (ctx) => {
  noQuery(ctx);
  const s = await loadSchedule(ctx);
  return { version: versionView(await pathVersion(ctx, (n) => getVersion(ctx.app.pool, s.id, n))) };
});

export const listFiresRoute = scopedRoute(READ_SCOPES, async (ctx) => {
  const { limit, after, pageOf } = listQuery(ctx, new Set(['limit', 'cursor']), 'f', '[0-9]{1,15}');
  const s = await loadSchedule(ctx);
  const rows = await listFires(ctx.app.pool, s.id, after === undefined ? undefined : msDb(Number(after)), limit);
  const { page, next_cursor } = pageOf(rows, (r) => String(dbMs(r.scheduled_for)));
  return { fires: page.map(fireView), next_cursor };
});
