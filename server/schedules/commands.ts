// The schedule commands, each inside its receipt-bearing command transaction. Lock order:
// namespace row (create) → schedule row → queue row shared (queue retirement takes it exclusively,
// then reads the enabled schedules targeting it) → the task-creation path's own locks (trigger).
import { OrbitError } from '@orbit/protocol/errors';
import type { ScheduleTaskTemplate } from '@orbit/protocol/http-views';
import { MAX_SCHEDULES_PER_NAMESPACE } from '@orbit/protocol/limits';
import type { AppContext } from '../app-context.js';
import type { Credential } from '../db/credentials.js';
import type { Conn, Tx } from '../db/pool.js';
import { dbNow } from '../db/time.js';
import { getQueue, type QueueRow } from '../db/queues.js';
import { getVersion, insertVersion, versionView } from '../db/schedule-versions.js';
import {
  getSchedule,
  insertSchedule,
  markScheduleRetired,
  scheduleView,
  setCurrentVersion,
  setLastTask,
  setSchedulePaused,
  type ScheduleRow,
} from '../db/schedules.js';
import { lockNamespace } from '../db/tenants.js';
import { auditCommand, createDefinition, revisionConflict } from '../admin/definitions.js';
import { createTasksInTransaction } from '../dispatch/submit.js';
import { requireQueueAccess } from '../admin/access.js';
import { compileCalendar } from './calendar.js';
import { dbMs, fireCommand, loadReadyVersion, msDb } from './versions.js';
import type { NormalizedVersion } from './version-input.js';

/** What is stored and fingerprinted: max_attempts resolved from the queue. */
export type StoredVersion = Omit<NormalizedVersion, 'task'> & { task: ScheduleTaskTemplate };

export function withTemplate(v: NormalizedVersion, queueMaxAttempts: number): StoredVersion {
  // A template has no not_before: each of its tasks is due at its fire time.
  const { not_before: _notBefore, ...task } = v.task;
  return { ...v, task: { ...task, max_attempts: task.max_attempts ?? queueMaxAttempts } };
}

async function liveQueue(c: Tx, cred: Credential, queueId: string, field: string): Promise<QueueRow> {
  const q = await getQueue(c, cred.namespaceId, queueId, 'share');
  if (!q) throw new OrbitError('NOT_FOUND', 'queue not found', { field });
  requireQueueAccess(cred, q.id);
  if (q.retired_at) throw new OrbitError('RESOURCE_RETIRED', 'the version targets a retired queue', { field });
  return q;
}

async function lockForCommand(c: Tx, cred: Credential, id: string, expectedRevision: string | null): Promise<ScheduleRow> {
  const s = await getSchedule(c, cred.namespaceId, id, 'update');
  if (!s) throw new OrbitError('NOT_FOUND', 'schedule not found');
  requireQueueAccess(cred, s.queue_id);
  if (s.retired_at) throw new OrbitError('RESOURCE_RETIRED', 'schedule is retired');
  if (expectedRevision !== null && String(s.revision) !== expectedRevision) throw revisionConflict(expectedRevision, String(s.revision));
  return s;
}

/** every_seconds counts from starts_at, or from the publication. */
function firstFire(v: StoredVersion, now: string, paused: boolean): string | null {
  if (paused) return null;
  const startsMs = v.starts_at === null ? null : Date.parse(v.starts_at);
  const nextAfter = compileCalendar(v.calendar, startsMs ?? dbMs(now), startsMs, v.ends_at === null ? null : Date.parse(v.ends_at));
  const t = nextAfter(dbMs(now));
  return t === null ? null : msDb(t);
}

async function publish(c: Conn, cred: Credential, scheduleId: string, number: number, v: StoredVersion, now: string): Promise<void> {
  const startsAt = v.starts_at === null ? null : msDb(Date.parse(v.starts_at));
  await insertVersion(c, {
    ...v,
    schedule_id: scheduleId,
    number,
    namespace_id: cred.namespaceId,
    application_id: cred.applicationId,
    starts_at: startsAt,
    ends_at: v.ends_at === null ? null : msDb(Date.parse(v.ends_at)),
    anchor_at: startsAt ?? now,
    created_at: now,
    created_by: cred.id,
  });
}

async function views(c: Conn, cred: Credential, id: string, number?: number) {
  const s = (await getSchedule(c, cred.namespaceId, id))!;
  const out: Record<string, unknown> = { schedule: scheduleView(s) };
  if (number !== undefined) out.version = versionView((await getVersion(c, id, number))!);
  return out;
}

export async function createSchedule(c: Tx, cred: Credential, b: { name: string; paused: boolean; version: StoredVersion }) {
  await lockNamespace(c, cred.namespaceId);
  const q = await liveQueue(c, cred, b.version.task.queue_id, 'version.task.queue_id');
  const id = await createDefinition(c, cred, {
    kind: 'schedule',
    name: b.name,
    limit: MAX_SCHEDULES_PER_NAMESPACE,
    insert: (id, now) =>
      insertSchedule(c, {
        id,
        namespace_id: cred.namespaceId,
        application_id: cred.applicationId,
        name: b.name,
        paused: b.paused,
        queue_id: q.id,
        next_fire_at: firstFire(b.version, now, b.paused),
        now,
      }),
    publishFirst: (id, now) => publish(c, cred, id, 1, b.version, now),
  });
  return { data: await views(c, cred, id, 1), resourceId: id };
}

export async function publishVersion(c: Tx, cred: Credential, id: string, b: { expected_revision: string; version: StoredVersion }) {
  const s = await lockForCommand(c, cred, id, b.expected_revision);
  await liveQueue(c, cred, b.version.task.queue_id, 'version.task.queue_id');
  const now = await dbNow(c);
  const number = Number(s.current_version) + 1;
  await publish(c, cred, id, number, b.version, now);
  await setCurrentVersion(c, id, number, b.version.task.queue_id, firstFire(b.version, now, Number(s.paused) === 1));
  await auditCommand(c, cred, 'schedule', 'publish', id, { number });
  return { data: await views(c, cred, id, number), resourceId: id };
}

/** A resume starts from now: the paused period is never caught up. */
export async function setPaused(c: Tx, cred: Credential, id: string, paused: boolean, expectedRevision: string) {
  const s = await lockForCommand(c, cred, id, expectedRevision);
  let next: string | null = null;
  if (!paused) {
    await liveQueue(c, cred, s.queue_id, 'queue_id');
    const v = (await loadReadyVersion(c, id, Number(s.current_version)))!;
    const t = v.nextAfter(dbMs(await dbNow(c)));
    next = t === null ? null : msDb(t);
  }
  await setSchedulePaused(c, id, paused, next);
  await auditCommand(c, cred, 'schedule', paused ? 'pause' : 'resume', id);
  return { data: await views(c, cred, id), resourceId: id };
}

export async function retireSchedule(c: Tx, cred: Credential, id: string, b: { expected_revision: string; reason: string }) {
  const s = await lockForCommand(c, cred, id, b.expected_revision);
  if (Number(s.paused) !== 1) throw new OrbitError('STATE_CONFLICT', 'only a paused schedule can be retired; pause it first');
  await markScheduleRetired(c, id, b.reason);
  await auditCommand(c, cred, 'schedule', 'retire', id, b);
  return { data: await views(c, cred, id), resourceId: id };
}

/** One task now from the current version, paused or not. */
export async function triggerSchedule(
  app: Pick<AppContext, 'metrics' | 'signals' | 'log'>,
  c: Tx,
  cred: Credential,
  id: string,
  scheduledFor: string | undefined,
) {
  const s = await lockForCommand(c, cred, id, null);
  const v = (await loadReadyVersion(c, id, Number(s.current_version)))!;
  const at = scheduledFor === undefined ? await dbNow(c) : msDb(Date.parse(scheduledFor));
  const r = await createTasksInTransaction(app, c, [fireCommand(cred, id, v, at)]);
  const out = r.outcomes[0]!;
  if (!out.ok) throw out.error;
  await setLastTask(c, id, out.data.task.id);
  return { data: { task: out.data.task }, resourceId: out.data.task.id, afterCommit: r.afterCommit };
}
