#!/usr/bin/env node
// The gateway node. Requires ORBIT_MYSQL_DSN (`npm start` is the embedded wrapper).
import { loadConfig } from '../config.js';
import { startGateway } from '../gateway-main.js';
import { installSignalHandlers } from './signals.js';
import { oneLine } from './args.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    process.stderr.write(`orbit: ${oneLine(err)}\n`);
    process.exit(2);
  }
  let gw;
  try {
    gw = await startGateway(config);
  } catch (err) {
    process.stderr.write(`orbit: ${oneLine(err)}\n`);
    process.exit(1);
  }
  process.stdout.write(JSON.stringify({ msg: 'orbit gateway ready', url: gw.url, node_id: config.nodeId }) + '\n');
  installSignalHandlers(async () => {
    await gw.close();
  });
}

void main();
