// SDK workers in the tests: the real worker-sdk (createWorker), on a file's gateway and tenant.
import { createWorker, type Logger, type Worker, type WorkerOptions } from '../../worker-sdk/index.js';

/** A logger that drops every record (the tests read outcomes, not log lines). */
export const silent: Logger = { info() {}, warn() {}, error() {} };

/** An SDK worker of the tenant on its queue, capacity 4, silent, with `handlers`; `over` replaces
 * any option. */
export function tenantWorker(
  f: { readonly gw: { url: string }; readonly t: { token: string; queue_id: string } },
  handlers: WorkerOptions['handlers'],
  over: Partial<WorkerOptions> = {},
): Worker {
  return createWorker({ url: f.gw.url, token: f.t.token, queues: [f.t.queue_id], capacity: 4, logger: silent, handlers, ...over });
}
