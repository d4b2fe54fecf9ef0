// Background parts of a node attached to the HTTP server: the worker gateway (WebSocket), the
// dispatcher and the sweeper, the result-event pruner and the schedules' firing loop. Each returns
// a closer run on shutdown, in order.
import type http from 'node:http';
import type { AppContext } from './app-context.js';
import { Gateway } from './gateway/ws-gateway.js';
import { EventPruner } from './events/retention.js';
import { ScheduleFirer } from './schedules/firer.js';

export async function attachBackground(app: AppContext, server: http.Server): Promise<(() => Promise<void>)[]> {
  const gw = new Gateway(app, server);
  app.gateway = gw;
  const pruner = new EventPruner(app);
  const firer = new ScheduleFirer(app);
  return [() => firer.stop(), () => gw.close(), () => pruner.stop()];
}
