// One fire of one schedule = one transaction (schedules.md "Firing"):
//   1. the schedule row, locked (SKIP LOCKED: another node firing it → nothing to do here) and
//      re-checked as due against the database clock;
//   2. the fire times this transaction settles: the one due time, or — catching up — every due time
//      up to now (at most CHUNK per transaction), each decided by the version's catchup/overlap;
//   3. the tasks, created by the one task-creation path (server/dispatch/submit.ts) inside this
//      transaction: same checks, quota, keys and wake-ups as POST /v1/tasks;
//   4. one fire record per fire time (primary key (schedule_id, scheduled_for): a fire time that
//      was recorded already cannot commit again), and next_fire_at advanced past them.
// All of it commits or none of it does, so a crash anywhere leaves the fire to be done again, whole.
import { OrbitError } from '../../protocol/errors.js';
import type { FireOutcome } from '../../protocol/http-views.js';
import type { AppContext } from '../app-context.js';
import { withTransaction, type Conn } from '../db/pool.js';
import { insertFires, taskState, type NewFire } from '../db/schedule-fires.js';
import { advanceSchedule, lockDueSchedule } from '../db/schedules.js';
import { createTasksInTransaction, type SubmitCommand } from '../dispatch/submit.js';
import { dbMs, loadReadyVersion, msDb } from './versions.js';

/** A fire time further behind the database clock than this, when its turn comes, starts a
 * catch-up (the version's `catchup` decides); closer ones are just late and fire normally. */
export const CATCHUP_GRACE_MS = 5_000;
/** Fire times one catch-up transaction settles (the rest in the next ones). ≥ the largest
 * catchup_limit, so `all` creates its tasks in the first transaction of a catch-up. */
const CHUNK = 1000;

const UNFINISHED = new Set(['WAITING', 'LEASED', 'RUNNING', 'NEEDS_REVIEW']);

export interface FireReport {
  fires: { scheduledForMs: number; outcome: FireOutcome }[];
  /** More due fire times remain (a long catch-up): fire again at once. */
  more: boolean;
  catchingUp: boolean;
  /** Database clock at the lock, and local ms from the lock to the commit (lag measurement). */
  nowMs: number;
  commitMs: number;
}

type App = Pick<AppContext, 'pool' | 'metrics' | 'events'>;

/** Tasks for `items`, all in this transaction; at the quota's edge each alone, the refused ones
 * marked (null). A retired queue is thrown: an enabled schedule never targets one (retirement and
 * resume/publish serialize on the queue row). */
async function createTasks(app: App, c: Conn, items: SubmitCommand[]): Promise<{ taskIds: (string | null)[]; afterCommit: (() => void)[] }> {
  const afterCommit: (() => void)[] = [];
  const idsOf = (outs: Awaited<ReturnType<typeof createTasksInTransaction>>['outcomes']) =>
    outs.map((o) => {
      if (!o.ok) throw o.error;
      return o.data.task.id;
    });
  await c.query('SAVEPOINT fire_tasks');
  try {
    const r = await createTasksInTransaction(app, c, items);
    afterCommit.push(r.afterCommit);
    return { taskIds: idsOf(r.outcomes), afterCommit };
  } catch (err) {
    if (!(err instanceof OrbitError && err.code === 'QUOTA_EXCEEDED')) throw err;
    await c.query('ROLLBACK TO SAVEPOINT fire_tasks');
  }
  const taskIds: (string | null)[] = [];
  for (const it of items) {
    await c.query('SAVEPOINT fire_task');
    try {
      const r = await createTasksInTransaction(app, c, [it]);
      afterCommit.push(r.afterCommit);
      taskIds.push(idsOf(r.outcomes)[0]!);
    } catch (err) {
      if (!(err instanceof OrbitError && err.code === 'QUOTA_EXCEEDED')) throw err;
      await c.query('ROLLBACK TO SAVEPOINT fire_task');
      taskIds.push(null);
    }
  }
  return { taskIds, afterCommit };
}

/** Fires schedule `id` if it is due; null when it is not (or another node holds it). */
export async function fireSchedule(app: App, id: string): Promise<FireReport | null> {
  let after: (() => void)[] = [];
  let lockedAt = 0n;
  const report = await withTransaction(app.pool, async (c): Promise<FireReport | null> => {
    after = [];
    const s = await lockDueSchedule(c, id);
    if (!s) return null;
    lockedAt = process.hrtime.bigint();
    const v = await loadReadyVersion(c, s.id, s.current_version);
    if (!v) throw new Error(`schedule ${s.id} has no version ${s.current_version}`);
    const nowMs = dbMs(s.now);
    const t0 = dbMs(s.next_fire_at!);
    const catchingUp = s.catchup_remaining !== null || t0 < nowMs - CATCHUP_GRACE_MS;

    const times = [t0];
    let more = false;
    if (catchingUp) {
      for (;;) {
        const n = v.calendar.nextAfter(times[times.length - 1]!);
        if (n === null || n > nowMs) break;
        if (times.length >= CHUNK) {
          more = true;
          break;
        }
        times.push(n);
      }
    }
    // catchup: none skips every missed time, latest creates the newest one, all creates the oldest
    // catchup_limit of them (the budget is kept on the row across the chunks of one catch-up).
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
    // overlap: skip while the previous task of this schedule is unfinished.
    if (v.overlap === 'skip') {
      let previousUnfinished = s.last_task_id !== null && UNFINISHED.has((await taskState(c, s.last_task_id)) ?? '');
      for (let i = 0; i < planned.length; i++) {
        if (planned[i] !== 'created') continue;
        if (previousUnfinished) planned[i] = 'skipped_overlap';
        else previousUnfinished = true; // the task created now is unfinished for the later times
      }
    }
    const creating = times.filter((_, i) => planned[i] === 'created');
    const items: SubmitCommand[] = creating.map((t) => ({
      credential: { id: s.id, namespaceId: s.namespace_id, applicationId: s.application_id, queueIds: '*' },
      key: null,
      prepared: v.prepared,
      origin: { scheduleId: s.id, scheduleVersion: v.number, scheduledFor: msDb(t) },
    }));
    const created = items.length > 0 ? await createTasks(app, c, items) : { taskIds: [], afterCommit: [] };
    after = created.afterCommit;
    const fires: NewFire[] = [];
    let k = 0;
    let lastTaskId: string | null = null;
    times.forEach((t, i) => {
      let outcome = planned[i]!;
      let taskId: string | null = null;
      if (outcome === 'created') {
        taskId = created.taskIds[k++] ?? null;
        if (taskId === null) outcome = 'failed_quota';
        else lastTaskId = taskId;
      }
      fires.push({ scheduledFor: msDb(t), outcome, taskId });
    });
    await insertFires(c, { scheduleId: s.id, namespaceId: s.namespace_id, applicationId: s.application_id, version: v.number, firedAt: s.now }, fires);
    const last = times[times.length - 1]!;
    const next = v.calendar.nextAfter(last);
    await advanceSchedule(c, s.id, {
      nextFireAt: next === null ? null : msDb(next),
      lastFireAt: msDb(last),
      lastTaskId,
      catchupRemaining: catchingUp && more ? budget : null,
    });
    return { fires: fires.map((f, i) => ({ scheduledForMs: times[i]!, outcome: f.outcome })), more, catchingUp, nowMs, commitMs: 0 };
  });
  if (!report) return null;
  report.commitMs = Number(process.hrtime.bigint() - lockedAt) / 1e6;
  for (const a of after) a();
  for (const f of report.fires) {
    app.metrics.scheduleFires.inc({ outcome: f.outcome });
    // Lag of fires on time (catch-up fires are late by definition and counted by their outcome).
    if (!report.catchingUp) app.metrics.scheduleLag.observe(Math.max(0, report.nowMs + report.commitMs - f.scheduledForMs) / 1000);
  }
  return report;
}
