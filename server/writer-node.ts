// The single-writer check: Orbit on MariaDB Galera supports one writer node at a time. Every
// gateway records the database node its connections reach, at start and on a heartbeat; a gateway
// that would write through another node than the live ones refuses to start, a running one warns.
// Under two writers row locks do not block across nodes, so conflicts become certification failures
// at commit, and GET_LOCKs are per node. Correctness does not rest on them (docs/design.md
// "Nodes, processes and the database"), but the load does. A row not refreshed since this gateway looked may predate a
// failover, so the start-up check waits for it to refresh or go stale before judging it.
import type { Logger } from 'pino';
import type { Pool } from './db/pool.js';
import { dbNow } from './db/time.js';
import { deleteGatewayNode, otherWriters, pruneGatewayNodes, readDbNode, upsertGatewayNode, type OtherWriter } from './mariadb/gateway-nodes.js';

export const WRITER_HEARTBEAT_MS = 2_000;
const LIVE_SECONDS = 10;
/** Rows of gateways gone this long are deleted at the next start. */
const STALE_SECONDS = 24 * 3600;

function describe(others: OtherWriter[]): string {
  return others.map((o) => `${o.node_id} through "${o.wsrep_node_name}"`).join(', ');
}

/** Throws when other live gateways of this database write through a different Galera node;
 * resolves with the function that stops the watch and deletes this gateway's row. */
export async function watchWriterNode(pool: Pool, nodeId: string, log: Logger): Promise<() => Promise<void>> {
  await pruneGatewayNodes(pool, STALE_SECONDS);
  let node = await readDbNode(pool);
  if (node.wsrepOn) {
    const since = await dbNow(pool);
    const until = Date.now() + 3 * WRITER_HEARTBEAT_MS;
    for (;;) {
      const others = await otherWriters(pool, nodeId, node.nodeName!, LIVE_SECONDS, since);
      if (others.length === 0) break;
      const fresh = others.filter((o) => o.fresh);
      if (fresh.length > 0 || Date.now() >= until) {
        throw new Error(
          `this gateway writes through Galera node "${node.nodeName}" but live gateways write through another node (${describe(fresh.length > 0 ? fresh : others)}): ` +
            'Orbit supports one writer node per cluster; point every gateway at the same proxy address (README, "High availability on MariaDB Galera")',
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  await upsertGatewayNode(pool, nodeId, node);
  log.info({ wsrep_on: node.wsrepOn, wsrep_node_name: node.nodeName }, 'database node recorded');
  if (!node.wsrepOn) {
    // One server: no other node to write through, so no heartbeat.
    return () => deleteGatewayNode(pool, nodeId).catch(() => {});
  }

  let since = await dbNow(pool);
  let previous = '';
  let warned = '';
  let stopped = false;
  let beat: Promise<void> = Promise.resolve();
  const tick = async () => {
    const now = await dbNow(pool);
    const next = await readDbNode(pool);
    if (next.nodeName !== node.nodeName)
      log.warn({ from: node.nodeName, to: next.nodeName }, 'this gateway now writes through another database node (failover)');
    node = next;
    await upsertGatewayNode(pool, nodeId, node);
    const others = node.wsrepOn ? (await otherWriters(pool, nodeId, node.nodeName!, LIVE_SECONDS, since)).filter((o) => o.fresh) : [];
    since = now;
    // Warned only when two beats in a row agree: during a failover a gateway that has not
    // reconnected yet may still name the old node for one beat.
    const seen = describe(others);
    if (others.length > 0 && seen === previous && seen !== warned) {
      log.warn({ wsrep_node_name: node.nodeName, others: seen }, 'gateways write through different Galera nodes: multi-writer is not supported');
      warned = seen;
    }
    if (others.length === 0) warned = '';
    previous = seen;
  };
  const timer = setInterval(() => {
    // A refused beat (failover in progress) is the next one's job.
    beat = beat.then(() => (stopped ? undefined : tick().catch(() => {})));
  }, WRITER_HEARTBEAT_MS);
  timer.unref();
  return async () => {
    stopped = true;
    clearInterval(timer);
    await beat;
    await deleteGatewayNode(pool, nodeId).catch(() => {});
  };
}
