// Starts one gateway node: pool, schema check, HTTP + WebSocket server, background loops.
import type { AddressInfo } from 'node:net';
import type { Config } from './config.js';
import { createPool, type Pool } from './db/pool.js';
import { assertSchemaCurrent } from './mariadb/migrations.js';
import { assertSessionSettings } from './db/session-setup.js';
import { readPacketBudget, type PacketBudget } from './db/packet-budget.js';
import { createLogger } from './logger.js';
import { createMetrics, registerDbGauges } from './metrics.js';
import { advanceRunsInTx } from './workflows/apply.js';
import { createHttpServer } from './http/server.js';
import { coalescedTransactions } from './dispatch/coalesce-tx.js';
import type { AppContext } from './app-context.js';
import { TaskSubmitter } from './dispatch/submit.js';
import { Gateway } from './gateway/ws-gateway.js';
import { startEventPruner } from './events/retention.js';
import { ScheduleFirer } from './schedules/firer.js';
import { NodeSignals } from './work-signals.js';
import { watchWriterNode } from './writer-node.js';

/** A caller may hand the node a pool it wraps (a benchmark's tap); the node ends it when it stops. */
export async function startGateway(config: Config, pool: Pool = createPool(config.mysqlDsn)) {
  const log = createLogger(config.logLevel, { node_id: config.nodeId });
  let budget: PacketBudget;
  let stopWriterWatch: () => Promise<void>;
  try {
    // Refuses to start when something between us and the server undoes createPool's session settings.
    await assertSessionSettings(pool);
    await assertSchemaCurrent(pool);
    budget = await readPacketBudget(pool);
    stopWriterWatch = await watchWriterNode(pool, config.nodeId, log);
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  const metrics = createMetrics();
  metrics.dbStatementBudget.set(budget.bytes);
  log.info({ max_allowed_packet: budget.maxAllowedPacket, statement_budget_bytes: budget.bytes }, 'database statement budget');
  const signals = new NodeSignals();
  const commandTx = coalescedTransactions(pool, {
    path: 'command',
    maxBatch: 64,
    maxParallel: 2,
    onBatch: (size, seconds) => {
      metrics.commitSeconds.observe({ op: 'commands' }, seconds);
      metrics.commandBatchSize.observe(size);
    },
  });
  const app: AppContext = { config, pool, log, metrics, signals, commandTx, advanceSteps: advanceRunsInTx, shuttingDown: false };
  registerDbGauges(metrics, pool);
  app.submitter = new TaskSubmitter(app);
  const server = createHttpServer(app);
  const gw = new Gateway(app, server, signals);
  const pruner = startEventPruner(app);
  const firer = new ScheduleFirer(app, signals);
  // Closed on shutdown in this order: no new fires before the sessions go, the pruner last.
  const closers = [() => firer.stop(), () => gw.close(), () => pruner.stop(), stopWriterWatch];
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.httpPort, config.httpHost, () => resolve());
    });
  } catch (err) {
    for (const c of closers) await c().catch(() => {});
    await pool.end().catch(() => {});
    const e = err as NodeJS.ErrnoException;
    throw new Error(`cannot listen on ORBIT_HTTP_ADDR ${config.httpHost}:${config.httpPort}: ${e.code ?? e.message}`);
  }
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `http://${host}:${addr.port}`;
  log.info({ url }, 'gateway listening');
  let closing: Promise<void> | null = null;
  return {
    app,
    url,
    /** Graceful stop: refuse new work, goaway to workers, finish in-flight transactions. */
    close(): Promise<void> {
      closing ??= (async () => {
        const t0 = Date.now();
        log.info('gateway stopping: refusing new work, goaway to workers');
        app.shuttingDown = true;
        for (const c of closers) await c().catch((err) => log.error({ err }, 'close step failed'));
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          setTimeout(() => server.closeAllConnections(), 2_000).unref();
        });
        await pool.end().catch(() => {});
        log.info({ duration_ms: Date.now() - t0 }, 'gateway stopped');
      })();
      return closing;
    },
  };
}
