// A gateway process for the fault tests (test/error-boundaries.test.ts, test/db-retry.test.ts):
// the real node (startGateway) on a tapped pool (bench/pool-tap.ts), with the handlers it composes
// wrapped here, so that a test proves an unexpected exception in each kind of handler ends one
// request or session, and that every transaction path retries what the database refuses — while
// the shipped server carries no switch, header or hook for it. The test commands it over the IPC
// channel of its spawn (test/support/faults.ts), each command answered once it is armed:
//   { point }: the next call of that point's handler throws `injected fault at <point>`;
//   { path, errno, n }: the next n transactions of `path` fail with MariaDB error `errno`.
// It prints the `orbit gateway ready` line of server/cli/orbit.ts and stops on SIGTERM the same way.
import { loadConfig } from '../server/config.js';
import { createPool } from '../server/db/pool.js';
import { startGateway } from '../server/gateway-main.js';
import { Router } from '../server/http/router.js';
import { Session } from '../server/gateway/session.js';
import { WorkerSocket } from '../server/gateway/worker-socket.js';
import { Reconciler } from '../server/gateway/reconciler.js';
import { installSignalHandlers } from '../server/cli/signals.js';
import { lifecycleLogger } from '../server/logger.js';
import { PoolTap } from './pool-tap.js';

export type FaultPoint = 'http' | 'frame' | 'upgrade' | 'timer';
export type FaultCommand = { point: FaultPoint } | { path: string; errno: number; n: number };

const armed = new Set<FaultPoint>();
/** Throws once when `point` is armed: called first thing by that point's wrapped handler. */
function hit(point: FaultPoint): void {
  if (armed.delete(point)) throw new Error(`injected fault at ${point}`);
}

/** Each point at the first call inside its boundary: the HTTP request handler's route match, the
 * upgrade's socket setup, a session's frame handler, the sweeper's tick (a timer). */
function wrapHandlers(): void {
  const match = Router.prototype.match;
  Router.prototype.match = function (this: Router, ...a: Parameters<Router['match']>) {
    hit('http');
    return match.apply(this, a);
  };
  const batchWrites = WorkerSocket.prototype.batchWrites;
  WorkerSocket.prototype.batchWrites = function (this: WorkerSocket, ...a: Parameters<WorkerSocket['batchWrites']>) {
    hit('upgrade');
    return batchWrites.apply(this, a);
  };
  const onMessage = Session.prototype['onMessage'];
  Session.prototype['onMessage'] = function (this: Session, ...a: Parameters<Session['onMessage']>) {
    hit('frame');
    return onMessage.apply(this, a);
  };
  const tick = Reconciler.prototype.tick;
  Reconciler.prototype.tick = function (this: Reconciler) {
    hit('timer');
    return tick.call(this);
  };
}

async function main(): Promise<void> {
  const life = lifecycleLogger();
  const config = loadConfig();
  const tap = new PoolTap();
  wrapHandlers();
  const gw = await startGateway(config, tap.attach(createPool(config.mysqlDsn)));
  process.on('message', (m: { id: number; command: FaultCommand }) => {
    const c = m.command;
    if ('point' in c) armed.add(c.point);
    else tap.failTransactions(c.path, c.errno, c.n);
    process.send!({ id: m.id });
  });
  // The test process is gone: nothing will stop this one otherwise.
  process.on('disconnect', () => void gw.close().finally(() => process.exit(0)));
  life.info({ url: gw.url, node_id: config.nodeId }, 'orbit gateway ready');
  installSignalHandlers(() => gw.close());
}

main().catch((err: unknown) => {
  lifecycleLogger().fatal({ err }, 'fault gateway did not start');
  process.exit(1);
});
