// A stored receipt replays even after the resource was retired.
import { RetireBody } from '@orbit/protocol/http-schemas';
import { retireQueue, retireSubscription } from '../events/retire.js';
import { afterLoading, command } from './command.js';
import { loadQueue } from './routes-queues.js';
import { loadSubscription } from './routes-subscriptions.js';

export const retireSubscriptionRoute = command({
  operation: 'POST /v1/subscriptions/{id}:retire',
  scope: 'events:manage',
  body: RetireBody,
  load: afterLoading(loadSubscription),
  effect: (c, b, { cred, params }) => retireSubscription(c, cred, params.id!, b),
  reply: (subscription) => ({ data: { subscription }, resourceId: subscription.id }),
});

export const retireQueueRoute = command({
  operation: 'POST /v1/queues/{id}:retire',
  scope: 'queues:manage',
  body: RetireBody,
  load: afterLoading(loadQueue),
  effect: (c, b, { cred, params }) => retireQueue(c, cred, params.id!, b),
  reply: (queue) => ({ data: { queue }, resourceId: queue.id }),
});
