// One gateway process of a node with ORBIT_PROCESSES > 1, forked by the node's primary
// (server/cli/processes.ts), which passes the DSN, the listen address and the node id in the
// environment. It is a whole gateway node (startGateway), with three differences: its /metrics
// serve the node's totals (server/cli/cluster-metrics.ts), its wake-ups reach its siblings
// (server/cli/sibling-wakes.ts), and it stops on the primary's SIGTERM only —
// a Ctrl-C reaches the whole process group, and the primary alone decides (it then sends SIGTERM).
// If the primary dies, node:cluster ends this process at once (no orphaned gateway keeps the port).
import { loadConfig, type Config } from '../config.js';
import { startGateway, type GatewayHandle } from '../gateway-main.js';
import { lifecycleLogger } from '../logger.js';
import { oneLine } from './args.js';
import { installSignalHandlers } from './signals.js';
import { metricsThroughPrimary } from './cluster-metrics.js';
import { relayWakes } from './sibling-wakes.js';
import { NodeSignals } from '../work-signals.js';
import type { ReadyMessage } from './processes.js';

async function main(): Promise<void> {
  const life = lifecycleLogger({ component: 'gateway-process' });
  const started: { config?: Config; gw?: GatewayHandle } = {};
  let startup: Promise<void> = Promise.resolve();
  process.on('SIGINT', () => {});
  installSignalHandlers(
    async () => {
      await startup.catch(() => {});
      if (started.gw) await started.gw.close();
      life.info({ node_id: started.config?.nodeId }, 'gateway process exited');
    },
    { signals: ['SIGTERM'] },
  );
  startup = (async () => {
    started.config = loadConfig();
    const gw = await startGateway(started.config);
    gw.app.metrics.exposition = metricsThroughPrimary(gw.app.metrics.registry);
    // startGateway gives every node a NodeSignals (its subscriber side is what the relay needs).
    if (!(gw.app.signals instanceof NodeSignals)) throw new Error('the gateway has no NodeSignals to relay');
    relayWakes(gw.app.signals);
    started.gw = gw;
  })();
  try {
    await startup;
  } catch (err) {
    life.fatal({ node_id: started.config?.nodeId }, oneLine(err));
    process.exit(1);
  }
  process.send!({ orbit: 'ready', url: started.gw!.url, node_id: started.config!.nodeId } satisfies ReadyMessage);
}

void main();
