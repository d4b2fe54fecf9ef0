#!/usr/bin/env node
// The gateway node; `npm start` is the wrapper with an embedded database.
import { loadConfig } from '../config.js';
import { startNode } from './processes.js';
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
  const ids = config.processes === 1 ? { node_id: config.nodeId } : {};
  const gw = await startNode(config, life).catch((err: unknown) => {
    life.child(ids).fatal(oneLine(err));
    process.exit(1);
  });
  const who = config.processes === 1 ? ids : { processes: gw.processes };
  life.info({ url: gw.url, ...who }, 'orbit gateway ready');
  installSignalHandlers(
    async () => {
      life.info(ids, 'orbit gateway shutting down');
      await gw.close();
      life.info(ids, 'orbit gateway exited');
    },
    // The primary waits for its processes' own hard-exit deadlines.
    { hardExitMs: config.processes === 1 ? 10_000 : 15_000 },
  );
}

void main();
