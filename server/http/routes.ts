import type { AppContext } from '../app-context.js';
import { schemaStatus } from '../mariadb/migrations.js';
import { OrbitError } from '@orbit/protocol/errors';
import { Router, type Route } from './router.js';
import * as tasks from './routes-tasks.js';
import { submitTask, submitTaskBatch } from './routes-submit.js';
import { serveApiDocument } from '../api-docs/serve.js';
import { serveRedoc, serveReferencePage } from '../api-docs/reference.js';
import * as queues from './routes-queues.js';
import * as subscriptions from './routes-subscriptions.js';
import * as schedules from './routes-schedules.js';
import * as workflows from './routes-workflows.js';
import * as runs from './routes-workflow-runs.js';

type Entry = [Route['method'], string, Route['handle']];

/** Every route but the public ones asks for a bearer credential. */
const AUTHENTICATED: Entry[] = [
  ['POST', '/v1/tasks:batch', submitTaskBatch],
  ['GET', '/v1/tasks', tasks.listTasksRoute],
  ['GET', '/v1/tasks/{id}', tasks.getTaskRoute],
  ['GET', '/v1/tasks/{id}/attempts', tasks.listAttemptsRoute],
  ['POST', '/v1/tasks/{id}:cancel', tasks.cancelTaskRoute],
  ['POST', '/v1/tasks/{id}:resolve', tasks.resolveTaskRoute],
  ['GET', '/v1/attempts/{id}', tasks.getAttemptRoute],
  ['POST', '/v1/queues', queues.createQueueRoute],
  ['GET', '/v1/queues', queues.listQueuesRoute],
  ['GET', '/v1/queues/{id}', queues.getQueueRoute],
  ['GET', '/v1/queues/{id}/stats', queues.queueStatsRoute],
  ['GET', '/v1/workers', queues.listWorkersRoute],
  ['POST', '/v1/queues/{id}:pause', queues.pauseQueueRoute],
  ['POST', '/v1/queues/{id}:resume', queues.resumeQueueRoute],
  ['POST', '/v1/queues/{id}:retire', queues.retireQueueRoute],
  ['POST', '/v1/subscriptions', subscriptions.createSubscriptionRoute],
  ['GET', '/v1/subscriptions', subscriptions.listSubscriptionsRoute],
  ['GET', '/v1/subscriptions/{id}', subscriptions.getSubscriptionRoute],
  ['GET', '/v1/subscriptions/{id}/deliveries', subscriptions.listDeliveriesRoute],
  ['POST', '/v1/subscriptions/{id}/deliveries:lease', subscriptions.leaseDeliveriesRoute],
  ['POST', '/v1/subscriptions/{id}/deliveries:ack', subscriptions.ackDeliveriesRoute],
  ['POST', '/v1/subscriptions/{id}:pause', subscriptions.pauseSubscriptionRoute],
  ['POST', '/v1/subscriptions/{id}:resume', subscriptions.resumeSubscriptionRoute],
  ['POST', '/v1/subscriptions/{id}:retire', subscriptions.retireSubscriptionRoute],
  ['POST', '/v1/schedules', schedules.createScheduleRoute],
  ['GET', '/v1/schedules', schedules.listSchedulesRoute],
  ['GET', '/v1/schedules/{id}', schedules.getScheduleRoute],
  ['POST', '/v1/schedules/{id}/versions', schedules.publishVersionRoute],
  ['GET', '/v1/schedules/{id}/versions', schedules.listVersionsRoute],
  ['GET', '/v1/schedules/{id}/versions/{n}', schedules.getVersionRoute],
  ['GET', '/v1/schedules/{id}/fires', schedules.listFiresRoute],
  ['POST', '/v1/schedules/{id}:pause', schedules.pauseScheduleRoute],
  ['POST', '/v1/schedules/{id}:resume', schedules.resumeScheduleRoute],
  ['POST', '/v1/schedules/{id}:trigger', schedules.triggerScheduleRoute],
  ['POST', '/v1/schedules/{id}:retire', schedules.retireScheduleRoute],
  ['POST', '/v1/workflows', workflows.createWorkflowRoute],
  ['GET', '/v1/workflows', workflows.listWorkflowsRoute],
  ['GET', '/v1/workflows/{id}', workflows.getWorkflowRoute],
  ['POST', '/v1/workflows/{id}/versions', workflows.publishWorkflowVersionRoute],
  ['GET', '/v1/workflows/{id}/versions', workflows.listWorkflowVersionsRoute],
  ['GET', '/v1/workflows/{id}/versions/{n}', workflows.getWorkflowVersionRoute],
  ['POST', '/v1/workflows/{id}:retire', workflows.retireWorkflowRoute],
  ['POST', '/v1/workflows/{id}/runs', runs.startRunRoute],
  ['GET', '/v1/workflow-runs', runs.listRunsRoute],
  ['GET', '/v1/workflow-runs/{id}', runs.getRunRoute],
  ['POST', '/v1/workflow-runs/{id}:pause', runs.pauseRunRoute],
  ['POST', '/v1/workflow-runs/{id}:resume', runs.resumeRunRoute],
  ['POST', '/v1/workflow-runs/{id}:cancel', runs.cancelRunRoute],
  ['POST', '/v1/workflow-runs/{id}/signals', runs.sendSignalRoute],
];

export function buildRoutes(app: AppContext): Router {
  const r = new Router();
  const publicRoutes: Entry[] = [
    ['GET', '/healthz', async () => ({ status: 200, data: { status: 'ok' } })],
    [
      'GET',
      '/readyz',
      async () => {
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
    ],
    ['GET', '/metrics', async () => ({ raw: true, status: 200, contentType: app.metrics.registry.contentType, body: await app.metrics.exposition() })],
    ['GET', '/v1/openapi.json', serveApiDocument('openapi')],
    ['GET', '/v1/asyncapi.json', serveApiDocument('asyncapi')],
    ['GET', '/v1/docs', serveReferencePage],
    ['GET', '/v1/docs/redoc.standalone.js', serveRedoc],
  ];
  for (const [method, template, handle] of publicRoutes) r.add({ method, template, auth: false, handle });
  r.add({ method: 'POST', template: '/v1/tasks', auth: true, checksCredential: true, handle: submitTask });
  for (const [method, template, handle] of AUTHENTICATED) r.add({ method, template, auth: true, handle });
  return r;
}
