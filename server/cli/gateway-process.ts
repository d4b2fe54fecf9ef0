// One gateway process of a multi-process node: a whole gateway node whose /metrics serve the
// node's totals and whose wake-ups reach its siblings. It ignores SIGINT: a Ctrl-C reaches the
// whole process group, and the primary alone decides when to stop it.
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
    // The relay needs the subscriber side.
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
