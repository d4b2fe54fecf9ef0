// One gateway process of a multi-process node: a whole gateway node whose /metrics serve the
// node's totals and whose wake-ups reach its siblings. It ignores SIGINT: a Ctrl-C reaches the
// whole process group, and the primary alone decides when to stop it.
import { loadConfig, type Config } from '../config.js';
import { startGateway } from '../gateway-main.js';
import { lifecycleLogger } from '../logger.js';
import { oneLine } from './args.js';
import { installSignalHandlers } from './signals.js';
import { metricsThroughPrimary } from './cluster-metrics.js';
import { relayWakes } from './sibling-wakes.js';
import type { ReadyMessage } from './processes.js';

const life = lifecycleLogger({ component: 'gateway-process' });
let config: Config | undefined;
process.on('SIGINT', () => {});
const startup = (async () => {
  config = loadConfig();
  const gw = await startGateway(config);
  gw.app.metrics.exposition = metricsThroughPrimary(gw.app.metrics.registry);
  relayWakes(gw.app.signals);
  return gw;
})();
installSignalHandlers(
  async () => {
    await (await startup.catch(() => undefined))?.close();
    life.info({ node_id: config?.nodeId }, 'gateway process exited');
  },
  { signals: ['SIGTERM'] },
);
startup.then(
  (gw) => process.send!({ orbit: 'ready', url: gw.url, node_id: gw.app.config.nodeId } satisfies ReadyMessage),
  (err: unknown) => {
    life.fatal({ node_id: config?.nodeId }, oneLine(err));
    process.exit(1);
  },
);
