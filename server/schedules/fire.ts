// The due schedules of one application fire in one transaction: rows locked with SKIP LOCKED (those
// another node is firing are left to it) and re-checked against the database clock; their tasks
// created through the one task-creation path; one fire record per fire time, whose primary key
// refuses a fire time recorded already; next_fire_at advanced. All of it commits or none does, so a
// crash leaves the fires to be done again, whole. Fires due together share the transaction, as
// submits do, rather than each waiting for the hot rows the previous fire holds until its commit.
import { OrbitError } from '@orbit/protocol/errors';
import type { FireOutcome } from '@orbit/protocol/http-views';
import { CATCHUP_LIMIT_MAX } from '@orbit/protocol/limits';
import { UNFINISHED_TASK_STATES } from '@orbit/protocol/states';
import type { AppContext } from '../app-context.js';
import { withTransaction, type Tx } from '../db/pool.js';
import { insertFires, taskStates, type NewFire } from '../db/schedule-fires.js';
import { advanceSchedules, lockDueSchedules, type Advance, type DueScheduleRow } from '../db/schedules.js';
import { createTasksInTransaction, type SubmitCommand } from '../dispatch/submit.js';
import { dbMs, fireCommand, loadReadyVersion, msDb, type ReadyVersion } from './versions.js';

/** A fire time further behind than this starts a catch-up; closer ones are just late. */
const CATCHUP_GRACE_MS = 5_000;
/** Fire times per catch-up transaction: ≥ the largest catchup_limit, so `all` creates its tasks in
 * the first transaction of a catch-up. */
const CHUNK = CATCHUP_LIMIT_MAX;

const UNFINISHED: ReadonlySet<string> = new Set(UNFINISHED_TASK_STATES);

export interface FireReport {
  scheduleId: string;
  fires: { scheduledForMs: number; outcome: FireOutcome }[];
  /** More due fire times remain: fire again at once. */
  more: boolean;
  catchingUp: boolean;
}

type App = Pick<AppContext, 'pool' | 'metrics' | 'signals' | 'log'>;

/** At the quota's edge each task is tried alone and a refused one is null. A retired queue is
 * thrown: retirement and resume/publish serialize on the queue row, so it cannot happen. */
async function createTasks(app: App, c: Tx, items: SubmitCommand[], afterCommit: (() => void)[]): Promise<(string | null)[]> {
  /** null when the quota refused them: rolled back to the savepoint. */
  const tryCreate = async (sp: string, its: SubmitCommand[]): Promise<string[] | null> => {
    await c.query(`SAVEPOINT ${sp}`);
    try {
      const r = await createTasksInTransaction(app, c, its);
      afterCommit.push(r.afterCommit);
      return r.outcomes.map((o) => {
        if (!o.ok) throw o.error;
        return o.data.task.id;
      });
    } catch (err) {
      if (!(err instanceof OrbitError && err.code === 'QUOTA_EXCEEDED')) throw err;
      await c.query(`ROLLBACK TO SAVEPOINT ${sp}`);
      return null;
    }
  };
  const all = await tryCreate('fire_tasks', items);
  if (all) return all;
  const taskIds: (string | null)[] = [];
  for (const it of items) taskIds.push((await tryCreate('fire_task', [it]))?.[0] ?? null);
  return taskIds;
}

/** Before overlap is applied. */
function plan(s: DueScheduleRow, v: ReadyVersion) {
  const nowMs = dbMs(s.now);
  const t0 = dbMs(s.next_fire_at!);
  const catchingUp = s.catchup_remaining !== null || t0 < nowMs - CATCHUP_GRACE_MS;
  const times = [t0];
  let more = false;
  for (let n = catchingUp ? v.nextAfter(t0) : null; n !== null && n <= nowMs; n = v.nextAfter(n)) {
    if (times.length >= CHUNK) {
      more = true;
      break;
    }
    times.push(n);
  }
  // The `all` budget is kept on the row across the chunks of one catch-up.
  let budget = s.catchup_remaining ?? (v.catchup === 'all' ? v.catchupLimit : 0);
  const planned: FireOutcome[] = times.map((_, i) => {
    if (!catchingUp) return 'created';
    if (v.catchup === 'latest') return i === times.length - 1 && !more ? 'created' : 'skipped_catchup';
    if (v.catchup === 'all' && budget > 0) {
      budget--;
      return 'created';
    }
    return 'skipped_catchup';
  });
  return { s, v, times, planned, more, catchingUp, budget };
}

/** `ids` are schedules of `applicationId`; [] when none is due or other nodes hold them. */
export async function fireSchedules(app: App, applicationId: string, ids: string[]): Promise<FireReport[]> {
  let after: (() => void)[] = [];
  let lockedAt = 0n;
  let nowMs = 0;
  const reports = await withTransaction(app.pool, 'fire', async (c): Promise<FireReport[]> => {
    after = [];
    const rows = await lockDueSchedules(c, ids);
    if (rows.length === 0) return [];
    lockedAt = process.hrtime.bigint();
    nowMs = dbMs(rows[0]!.now);
    const plans: ReturnType<typeof plan>[] = [];
    for (const s of rows) {
      if (s.application_id !== applicationId) throw new Error(`schedule ${s.id} is not of application ${applicationId}`);
      const v = await loadReadyVersion(c, s.id, s.current_version);
      if (!v) throw new Error(`schedule ${s.id} has no version ${s.current_version}`);
      plans.push(plan(s, v));
    }
    const lastTaskIds = plans.flatMap((p) => (p.v.overlap === 'skip' && p.s.last_task_id ? [p.s.last_task_id] : []));
    const states = await taskStates(c, lastTaskIds);
    const items: SubmitCommand[] = [];
    for (const p of plans) {
      const credential = { id: p.s.id, namespaceId: p.s.namespace_id, applicationId, queueIds: '*' as const };
      // overlap skip: no task while the previous one is unfinished, the one created now included.
      let previousUnfinished = p.v.overlap === 'skip' && p.s.last_task_id !== null && UNFINISHED.has(states.get(p.s.last_task_id) ?? '');
      p.times.forEach((t, i) => {
        if (p.planned[i] !== 'created') return;
        if (previousUnfinished) p.planned[i] = 'skipped_overlap';
        else items.push(fireCommand(credential, p.s.id, p.v, msDb(t)));
        previousUnfinished ||= p.v.overlap === 'skip';
      });
    }
    const taskIds = items.length > 0 ? await createTasks(app, c, items, after) : [];
    const fires: NewFire[] = [];
    const advances: Advance[] = [];
    let k = 0;
    for (const p of plans) {
      let lastTaskId: string | null = null;
      p.times.forEach((t, i) => {
        let taskId: string | null = null;
        if (p.planned[i] === 'created') {
          taskId = taskIds[k++] ?? null;
          if (taskId === null) p.planned[i] = 'failed_quota';
          else lastTaskId = taskId;
        }
        fires.push({ schedule_id: p.s.id, scheduled_for: msDb(t), version: p.v.number, outcome: p.planned[i]!, task_id: taskId });
      });
      const last = p.times[p.times.length - 1]!;
      const next = p.v.nextAfter(last);
      advances.push({
        id: p.s.id,
        next_fire_at: next === null ? null : msDb(next),
        last_fire_at: msDb(last),
        last_task_id: lastTaskId,
        catchup_remaining: p.catchingUp && p.more ? p.budget : null,
      });
    }
    const ns = new Map(rows.map((r) => [r.id, r.namespace_id]));
    await insertFires(c, { namespaceOf: (id) => ns.get(id)!, applicationId, firedAt: rows[0]!.now }, fires);
    await advanceSchedules(c, advances);
    return plans.map((p) => ({
      scheduleId: p.s.id,
      fires: p.times.map((t, i) => ({ scheduledForMs: t, outcome: p.planned[i]! })),
      more: p.more,
      catchingUp: p.catchingUp,
    }));
  });
  if (reports.length === 0) return reports;
  const commitMs = Number(process.hrtime.bigint() - lockedAt) / 1e6;
  for (const a of after) a();
  for (const r of reports) {
    for (const f of r.fires) {
      app.metrics.scheduleFires.inc({ outcome: f.outcome });
      // Catch-up fires are late by definition and counted by their outcome only.
      if (!r.catchingUp) app.metrics.scheduleLag.observe(Math.max(0, nowMs + commitMs - f.scheduledForMs) / 1000);
    }
  }
  return reports;
}
