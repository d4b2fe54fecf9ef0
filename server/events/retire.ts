// Irreversible retirement of a subscription or a queue, inside the idempotent command's
// transaction. Every check is a plain read taken after the locks, so its read view is created once
// the competing writers are excluded: for a subscription the stream head, then the subscription
// row; for a queue its row FOR UPDATE, which every path that adds work to the queue locks at least
// shared. A writer still in flight only makes the check more conservative.
import type { Subscription } from '@orbit/protocol/http-views';
import { OrbitError } from '@orbit/protocol/errors';
import type { RetireBody } from '@orbit/protocol/http-schemas';
import type { Conn, Tx } from '../db/pool.js';
import type { Credential } from '../db/credentials.js';
import type { Queue } from '@orbit/protocol/http-views';
import { getQueue, markQueueRetired, queueView } from '../db/queues.js';
import { countHeldKeysOfQueue, countLiveAttemptsOfQueue, needsReviewTaskIds, unfinishedByState, unfinishedRunsOfQueue } from '../db/queue-blockers.js';
import { MAX_BUSY_RUN_IDS } from '@orbit/protocol/limits';
import {
  countQueueSubscriptions,
  countUnacked,
  countUnmaterialized,
  getSubscription,
  lockWatermark,
  markSubscriptionRetired,
  subscriptionView,
} from '../db/subscriptions.js';
import { auditCommand, revisionConflict } from '../admin/definitions.js';
import { enabledSchedulesOnQueue } from '../db/schedules.js';
import { requireQueueAccess } from '../admin/access.js';
import { assertNoGap, filterOf } from './stream.js';

export async function retireSubscription(c: Tx, cred: Credential, id: string, b: RetireBody): Promise<Subscription> {
  const wm = await lockWatermark(c, cred.namespaceId);
  const s = await getSubscription(c, cred.namespaceId, id, 'update');
  if (!s || s.owner_credential_id !== cred.id) throw new OrbitError('NOT_FOUND', 'subscription not found');
  requireQueueAccess(cred, s.queue_id);
  if (s.retired_at) throw new OrbitError('STATE_CONFLICT', 'subscription is already retired');
  if (String(s.revision) !== b.expected_revision) throw revisionConflict(b.expected_revision, String(s.revision));
  const unacked = await countUnacked(c, s.id);
  if (unacked > 0) {
    throw new OrbitError('RESOURCE_BUSY', `subscription has ${unacked} deliveries not acknowledged (PENDING, LEASED or EXPIRED); consume and ack them first`, {
      reason: 'unacked_deliveries',
      count: unacked,
    });
  }
  await assertNoGap(c, s, wm);
  const undelivered = await countUnmaterialized(c, filterOf(s), String(s.cursor_sequence), wm);
  if (undelivered > 0) {
    throw new OrbitError(
      'RESOURCE_BUSY',
      `subscription has ${undelivered} matching events up to the watermark ${wm} not yet delivered; lease and ack them first`,
      { reason: 'undelivered_events', count: undelivered, watermark: wm },
    );
  }
  await markSubscriptionRetired(c, s.id, wm);
  await auditCommand(c, cred, 'subscription', 'retire', s.id, { reason: b.reason, expected_revision: b.expected_revision, retired_sequence: wm });
  const row = (await getSubscription(c, cred.namespaceId, s.id))!;
  return subscriptionView(row, 0);
}

interface BusyReason {
  reason:
    | 'unfinished_tasks'
    | 'needs_review_tasks'
    | 'in_flight_attempts'
    | 'unreleased_permits'
    | 'held_resource_keys'
    | 'subscriptions'
    | 'schedules'
    | 'workflow_runs';
  count: number;
  message: string;
  task_ids?: string[];
  schedule_ids?: string[];
  run_ids?: string[];
}

/** The caller holds the queue row FOR UPDATE. */
async function queueBlockers(c: Conn, q: { id: string; namespace_id: string; active_attempts: number }): Promise<BusyReason[]> {
  const out: BusyReason[] = [];
  const block = (reason: BusyReason['reason'], count: number, message: string, ids?: Pick<BusyReason, 'task_ids' | 'schedule_ids' | 'run_ids'>) => {
    if (count > 0) out.push({ reason, count, message, ...ids });
  };
  const tasks = (await unfinishedByState(c, q.id, q.namespace_id)).counts;
  const live = tasks.filter((r) => r.state !== 'NEEDS_REVIEW');
  const liveCount = live.reduce((n, r) => n + Number(r.n), 0);
  block('unfinished_tasks', liveCount, `${liveCount} unfinished tasks (${live.map((r) => `${r.state} ${r.n}`).join(', ')})`);
  const review = tasks.find((r) => r.state === 'NEEDS_REVIEW');
  if (review) {
    const ids = await needsReviewTaskIds(c, q.id);
    const more = Number(review.n) > ids.length ? ', …' : '';
    block('needs_review_tasks', Number(review.n), `${review.n} tasks in NEEDS_REVIEW (resolve them first: ${ids.join(', ')}${more})`, { task_ids: ids });
  }
  const inFlight = await countLiveAttemptsOfQueue(c, q.id);
  block('in_flight_attempts', inFlight, `${inFlight} in-flight attempts (LEASED or RUNNING)`);
  block('unreleased_permits', q.active_attempts, `${q.active_attempts} queue permits not released (active_attempts)`);
  const held = await countHeldKeysOfQueue(c, q.namespace_id, q.id);
  block('held_resource_keys', held, `${held} resource-key permits held by attempts of this queue`);
  const subs = await countQueueSubscriptions(c, q.id);
  block('subscriptions', subs, `${subs} non-retired subscriptions (paused included) target this queue; retire them first`);
  const schedules = await enabledSchedulesOnQueue(c, q.id);
  block('schedules', schedules.length, `${schedules.length} enabled schedules target this queue (pause them first: ${schedules.join(', ')})`, {
    schedule_ids: schedules,
  });
  // A run pins every queue its version names, reached or not.
  const runs = await unfinishedRunsOfQueue(c, q.id, MAX_BUSY_RUN_IDS);
  const moreRuns = runs.count > runs.ids.length ? ', …' : '';
  const runsMessage = `${runs.count} unfinished workflow runs (RUNNING or PAUSED) whose version names this queue (cancel them or let them finish: ${runs.ids.join(', ')}${moreRuns})`;
  block('workflow_runs', runs.count, runsMessage, { run_ids: runs.ids });
  return out;
}

export async function retireQueue(c: Tx, cred: Credential, id: string, b: RetireBody): Promise<Queue> {
  const q = await getQueue(c, cred.namespaceId, id, 'update');
  if (!q) throw new OrbitError('NOT_FOUND', 'queue not found');
  requireQueueAccess(cred, q.id);
  if (q.retired_at) throw new OrbitError('STATE_CONFLICT', 'queue is already retired');
  if (String(q.revision) !== b.expected_revision) throw revisionConflict(b.expected_revision, String(q.revision));
  const blockers = await queueBlockers(c, q);
  if (blockers.length > 0) {
    throw new OrbitError('RESOURCE_BUSY', `queue cannot be retired: ${blockers.map((x) => x.message).join('; ')}`, {
      reasons: blockers.map((x) => x.reason),
      blockers: blockers.map(({ message: _m, ...rest }) => rest),
    });
  }
  await markQueueRetired(c, q.id, b.reason);
  await auditCommand(c, cred, 'queue', 'retire', q.id, { reason: b.reason, expected_revision: b.expected_revision });
  return queueView((await getQueue(c, cred.namespaceId, q.id))!);
}
