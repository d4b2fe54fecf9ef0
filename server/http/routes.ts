import type { AppContext } from '../app-context.js';
import { schemaStatus } from '../mariadb/migrations.js';
import { OrbitError } from '@orbit/protocol/errors';
import { Router } from './router.js';
import { getTaskRoute, listTasksRoute } from './routes-tasks.js';
import { submitTask, submitTaskBatch } from './routes-submit.js';
import { serveApiDocument } from '../api-docs/serve.js';
import { serveRedoc, serveReferencePage } from '../api-docs/reference.js';
import { cancelTaskRoute, getAttemptRoute, listAttemptsRoute, resolveTaskRoute } from './routes-attempts.js';
import { createQueueRoute, getQueueRoute, listQueuesRoute, pauseQueueRoute, resumeQueueRoute } from './routes-queues.js';
import {
  ackDeliveriesRoute,
  createSubscriptionRoute,
  getSubscriptionRoute,
  leaseDeliveriesRoute,
  listDeliveriesRoute,
  listSubscriptionsRoute,
  pauseSubscriptionRoute,
  resumeSubscriptionRoute,
} from './routes-subscriptions.js';
import { retireQueueRoute, retireSubscriptionRoute } from './routes-retire.js';
import { listWorkersRoute, queueStatsRoute } from './routes-observe.js';
import {
  createScheduleRoute,
  getScheduleRoute,
  getVersionRoute,
  listFiresRoute,
  listSchedulesRoute,
  listVersionsRoute,
  pauseScheduleRoute,
  publishVersionRoute,
  resumeScheduleRoute,
  retireScheduleRoute,
  triggerScheduleRoute,
} from './routes-schedules.js';
import { addWorkflowRoutes } from './routes-workflows.js';
import { addWorkflowRunRoutes } from './routes-workflow-runs.js';

export function buildRoutes(app: AppContext): Router {
  const r = new Router();
  r.add({ method: 'GET', template: '/healthz', auth: false, handle: async () => ({ status: 200, data: { status: 'ok' } }) });
  r.add({
    method: 'GET',
    template: '/readyz',
    auth: false,
    handle: async () => {
      if (app.shuttingDown) throw new OrbitError('UNAVAILABLE', 'shutting down');
      let s;
      try {
        s = await schemaStatus(app.pool);
      } catch {
        throw new OrbitError('UNAVAILABLE', 'database unreachable');
      }
      if (s.pending.length || s.unknown.length) throw new OrbitError('UNAVAILABLE', 'schema does not match this gateway');
      return { status: 200, data: { status: 'ready', schema_version: s.current } };
    },
  });
  r.add({
    method: 'GET',
    template: '/metrics',
    auth: false,
    handle: async () => ({ raw: true, status: 200, contentType: app.metrics.registry.contentType, body: await app.metrics.exposition() }),
  });
  r.add({ method: 'GET', template: '/v1/openapi.json', auth: false, handle: serveApiDocument('openapi') });
  r.add({ method: 'GET', template: '/v1/asyncapi.json', auth: false, handle: serveApiDocument('asyncapi') });
  r.add({ method: 'GET', template: '/v1/docs', auth: false, handle: serveReferencePage });
  r.add({ method: 'GET', template: '/v1/docs/redoc.standalone.js', auth: false, handle: serveRedoc });
  r.add({ method: 'POST', template: '/v1/tasks', auth: true, checksCredential: true, handle: submitTask });
  r.add({ method: 'POST', template: '/v1/tasks:batch', auth: true, handle: submitTaskBatch });
  r.add({ method: 'GET', template: '/v1/tasks', auth: true, handle: listTasksRoute });
  r.add({ method: 'GET', template: '/v1/tasks/{id}', auth: true, handle: getTaskRoute });
  r.add({ method: 'GET', template: '/v1/tasks/{id}/attempts', auth: true, handle: listAttemptsRoute });
  r.add({ method: 'POST', template: '/v1/tasks/{id}:cancel', auth: true, handle: cancelTaskRoute });
  r.add({ method: 'POST', template: '/v1/tasks/{id}:resolve', auth: true, handle: resolveTaskRoute });
  r.add({ method: 'GET', template: '/v1/attempts/{id}', auth: true, handle: getAttemptRoute });
  r.add({ method: 'POST', template: '/v1/queues', auth: true, handle: createQueueRoute });
  r.add({ method: 'GET', template: '/v1/queues', auth: true, handle: listQueuesRoute });
  r.add({ method: 'GET', template: '/v1/queues/{id}', auth: true, handle: getQueueRoute });
  r.add({ method: 'GET', template: '/v1/queues/{id}/stats', auth: true, handle: queueStatsRoute });
  r.add({ method: 'GET', template: '/v1/workers', auth: true, handle: listWorkersRoute });
  r.add({ method: 'POST', template: '/v1/queues/{id}:pause', auth: true, handle: pauseQueueRoute });
  r.add({ method: 'POST', template: '/v1/queues/{id}:resume', auth: true, handle: resumeQueueRoute });
  r.add({ method: 'POST', template: '/v1/queues/{id}:retire', auth: true, handle: retireQueueRoute });
  r.add({ method: 'POST', template: '/v1/subscriptions', auth: true, handle: createSubscriptionRoute });
  r.add({ method: 'GET', template: '/v1/subscriptions', auth: true, handle: listSubscriptionsRoute });
  r.add({ method: 'GET', template: '/v1/subscriptions/{id}', auth: true, handle: getSubscriptionRoute });
  r.add({ method: 'GET', template: '/v1/subscriptions/{id}/deliveries', auth: true, handle: listDeliveriesRoute });
  r.add({ method: 'POST', template: '/v1/subscriptions/{id}/deliveries:lease', auth: true, handle: leaseDeliveriesRoute });
  r.add({ method: 'POST', template: '/v1/subscriptions/{id}/deliveries:ack', auth: true, handle: ackDeliveriesRoute });
  r.add({ method: 'POST', template: '/v1/subscriptions/{id}:pause', auth: true, handle: pauseSubscriptionRoute });
  r.add({ method: 'POST', template: '/v1/subscriptions/{id}:resume', auth: true, handle: resumeSubscriptionRoute });
  r.add({ method: 'POST', template: '/v1/subscriptions/{id}:retire', auth: true, handle: retireSubscriptionRoute });
  r.add({ method: 'POST', template: '/v1/schedules', auth: true, handle: createScheduleRoute });
  r.add({ method: 'GET', template: '/v1/schedules', auth: true, handle: listSchedulesRoute });
  r.add({ method: 'GET', template: '/v1/schedules/{id}', auth: true, handle: getScheduleRoute });
  r.add({ method: 'POST', template: '/v1/schedules/{id}/versions', auth: true, handle: publishVersionRoute });
  r.add({ method: 'GET', template: '/v1/schedules/{id}/versions', auth: true, handle: listVersionsRoute });
  r.add({ method: 'GET', template: '/v1/schedules/{id}/versions/{n}', auth: true, handle: getVersionRoute });
  r.add({ method: 'GET', template: '/v1/schedules/{id}/fires', auth: true, handle: listFiresRoute });
  r.add({ method: 'POST', template: '/v1/schedules/{id}:pause', auth: true, handle: pauseScheduleRoute });
  r.add({ method: 'POST', template: '/v1/schedules/{id}:resume', auth: true, handle: resumeScheduleRoute });
  r.add({ method: 'POST', template: '/v1/schedules/{id}:trigger', auth: true, handle: triggerScheduleRoute });
  r.add({ method: 'POST', template: '/v1/schedules/{id}:retire', auth: true, handle: retireScheduleRoute });
  addWorkflowRoutes(r);
  addWorkflowRunRoutes(r);
  return r;
}
