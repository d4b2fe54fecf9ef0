#!/usr/bin/env node
// The gateway node. Requires ORBIT_MYSQL_DSN (`npm start` is the embedded wrapper).
import { loadConfig } from '../config.js';
import { startGateway } from '../gateway-main.js';
import { installSignalHandlers } from './signals.js';
import { oneLine } from './args.js';
import { lifecycleLogger } from '../logger.js';

async function main(): Promise<void> {
  let config;
  const life = lifecycleLogger();
  try {
    config = loadConfig();
  } catch (err) {
    life.fatal(oneLine(err));
    process.exit(2);
  }
  let gw;
  try {
    gw = await startGateway(config);
  } catch (err) {
    life.child({ node_id: config.nodeId }).fatal(oneLine(err));
    process.exit(1);
  }
  life.info({ url: gw.url, node_id: config.nodeId }, 'orbit gateway ready');
  installSignalHandlers(async () => {
    life.info({ node_id: config.nodeId }, 'orbit gateway shutting down');
    await gw.close();
    life.info({ node_id: config.nodeId }, 'orbit gateway exited');
  });
}

void main();
