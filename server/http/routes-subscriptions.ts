// Result stream consumers; lease and ack are not receipt-bearing.
import { OrbitError } from '@orbit/protocol/errors';
import { AckDeliveriesBody, CreateSubscriptionBody, EVENT_TYPES, LeaseDeliveriesBody, RetireBody, RevisionBody } from '@orbit/protocol/http-schemas';
import { MAX_SUBSCRIPTIONS_PER_NAMESPACE } from '@orbit/protocol/limits';
import { DELIVERY_STATES, isDeliveryState } from '@orbit/protocol/states';
import {
  ackDeliveryRows,
  committedWatermark,
  deliveryView,
  eventsBySequence,
  getSubscription,
  insertSubscription,
  listDeliveryRows,
  listSubscriptions,
  subscriptionView,
  type SubscriptionRow,
} from '../db/subscriptions.js';
import { lockNamespace } from '../db/tenants.js';
import { auditCommand, checkQuota, insertNamed, pauseAtRevision } from '../admin/definitions.js';
import { leaseDeliveries, pendingCount } from '../events/stream.js';
import { retireSubscription } from '../events/retire.js';
import { newId } from '../ids.js';
import { canUseQueue, requireQueueAccess } from '../admin/access.js';
import { namedQueue, notOneOf } from './hints.js';
import { command, commandsOn, readBody, scopedRoute, rejectQuery, viewReply } from './command.js';
import type { RequestCtx } from './context.js';
import { listQuery, noQuery } from './list-query.js';

export const createSubscriptionRoute = command({
  operation: 'POST /v1/subscriptions',
  scope: 'events:manage',
  body: CreateSubscriptionBody,
  status: 201,
  load: async (ctx, b) => {
    // The filter is a set: order does not change the command.
    const n = { name: b.name, queue_id: b.queue_id, event_types: EVENT_TYPES.filter((t) => b.event_types.includes(t)) };
    const cred = ctx.cred;
    // Before the receipt lookup: a replay never hands a subscription of a queue outside queue_ids
    // to a limited credential.
    if (!canUseQueue(cred, n.queue_id)) await namedQueue(ctx, n.queue_id);
    return n;
  },
  effect: async (c, n, ctx) => {
    const cred = ctx.cred;
    // The namespace row serializes creations against the quota.
    await lockNamespace(c, cred.namespaceId);
    const q = await namedQueue(ctx, n.queue_id, undefined, c);
    if (q.retired_at) throw new OrbitError('RESOURCE_RETIRED', 'queue is retired', { field: 'queue_id' });
    await checkQuota(c, cred, 'subscription', MAX_SUBSCRIPTIONS_PER_NAMESPACE);
    const wm = await committedWatermark(c, cred.namespaceId);
    const id = newId();
    await insertNamed('subscription', n.name, () =>
      insertSubscription(c, {
        id,
        namespace_id: cred.namespaceId,
        name: n.name,
        queue_id: q.id,
        event_types: n.event_types,
        owner_credential_id: cred.id,
        cursor_sequence: wm,
      }),
    );
    await auditCommand(c, cred, 'subscription', 'create', id, n);
    return subscriptionView((await getSubscription(c, cred.namespaceId, id))!, 0);
  },
  reply: viewReply('subscription'),
});

/** Only its owner sees a subscription. */
async function loadSubscription(ctx: RequestCtx): Promise<SubscriptionRow> {
  const row = await getSubscription(ctx.app.pool, ctx.cred.namespaceId, ctx.params.id!);
  if (!row || row.owner_credential_id !== ctx.cred.id) throw new OrbitError('NOT_FOUND', 'subscription not found');
  requireQueueAccess(ctx.cred, row.queue_id);
  return row;
}

export const getSubscriptionRoute = scopedRoute(['events:read'], async (ctx) => {
  noQuery(ctx);
  const s = await loadSubscription(ctx);
  return { subscription: subscriptionView(s, await pendingCount(ctx.app.pool, s)) };
});

export const listSubscriptionsRoute = scopedRoute(['events:read'], async (ctx) => {
  noQuery(ctx);
  const pool = ctx.app.pool;
  const rows = (await listSubscriptions(pool, ctx.cred.namespaceId, ctx.cred.id)).filter((r) => canUseQueue(ctx.cred, r.queue_id));
  const wm = await committedWatermark(pool, ctx.cred.namespaceId);
  const out = [];
  for (const r of rows) out.push(subscriptionView(r, await pendingCount(pool, r, wm)));
  return { subscriptions: out };
});

const onSubscription = commandsOn({ path: '/v1/subscriptions', scope: 'events:manage', load: loadSubscription, reply: viewReply('subscription') });

function pauseOrResume(paused: boolean) {
  return onSubscription(paused ? 'pause' : 'resume', RevisionBody, async (c, b, { cred, params }) => {
    const id = params.id!;
    await pauseAtRevision(c, cred, 'subscription', (await getSubscription(c, cred.namespaceId, id, 'update'))!, paused, b.expected_revision);
    const row = (await getSubscription(c, cred.namespaceId, id))!;
    return subscriptionView(row, await pendingCount(c, row));
  });
}

export const pauseSubscriptionRoute = pauseOrResume(true);
export const resumeSubscriptionRoute = pauseOrResume(false);
export const retireSubscriptionRoute = onSubscription('retire', RetireBody, (c, b, { cred, params }) => retireSubscription(c, cred, params.id!, b));

const HISTORY_PARAMS = new Set(['state', 'limit', 'cursor']);

export const listDeliveriesRoute = scopedRoute(['events:read'], async (ctx) => {
  const { one, limit, after, pageOf } = listQuery(ctx, HISTORY_PARAMS, 'd');
  const s = await loadSubscription(ctx);
  const state = one('state');
  if (state !== undefined && !isDeliveryState(state)) throw notOneOf('state', state, DELIVERY_STATES);
  const rows = await listDeliveryRows(ctx.app.pool, s.id, { state, afterSequence: after, limit });
  const { page, next_cursor } = pageOf(rows, (r) => String(r.sequence));
  const events = await eventsBySequence(
    ctx.app.pool,
    s.namespace_id,
    page.map((r) => String(r.sequence)),
  );
  return { deliveries: page.map((r) => deliveryView(r, events.get(String(r.sequence)))), next_cursor };
});

export const leaseDeliveriesRoute = scopedRoute(['events:read'], async (ctx) => {
  rejectQuery(ctx);
  const b = await readBody(ctx, LeaseDeliveriesBody);
  const s = await loadSubscription(ctx);
  const deliveries = await leaseDeliveries(ctx.app.pool, ctx.cred.namespaceId, s.id, b.max, b.lease_seconds);
  return { deliveries };
});

export const ackDeliveriesRoute = scopedRoute(['events:read'], async (ctx) => {
  rejectQuery(ctx);
  const b = await readBody(ctx, AckDeliveriesBody);
  const s = await loadSubscription(ctx);
  const acked = await ackDeliveryRows(ctx.app.pool, s.id, [...new Set(b.delivery_ids)]);
  return { acked };
});
