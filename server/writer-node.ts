// The single-writer check (issue 23): Orbit on MariaDB Galera is supported with one writer node at
// a time. Every gateway records which database node its connections reach (gateway_nodes,
// migration 000008) at start and on a heartbeat; a gateway that would write through another node
// than the other live gateways refuses to start with one line, and a running one warns.
//
// Why refuse: under two writers a row lock taken on one node does not block the other node, so
// the conflicts Orbit's transactions serialize on become certification failures at commit (retried,
// but ~2 per completion in the experiment of issue 23), and the GET_LOCKs that keep concurrent
// commands with one Idempotency-Key from deadlocking, and pruners from duplicating work, are per
// node. Correctness does not rest on them (design.md "Galera"), but the load does.
//
// After a failover the proxy sends new connections to another node, and each gateway's next
// heartbeat records it; a row not refreshed since this gateway looked may predate the failover, so
// the start-up check waits for it to refresh (or go stale) before judging it.
import type { Logger } from 'pino';
import type { Pool } from './db/pool.js';
import {
  dbNow,
  deleteGatewayNode,
  otherWriters,
  pruneGatewayNodes,
  readDbNode,
  upsertGatewayNode,
  type DbNode,
  type OtherWriter,
} from './mariadb/gateway-nodes.js';

/** How often a gateway refreshes its row (and re-reads its node). */
export const WRITER_HEARTBEAT_MS = 2_000;
/** A row seen within this many seconds is a live gateway. */
const LIVE_SECONDS = 10;
/** Rows of gateways gone this long are deleted at the next start. */
const STALE_SECONDS = 24 * 3600;

export interface WriterNodeWatch {
  /** The node this gateway writes through, as last read. */
  readonly node: DbNode;
  /** Stops the heartbeat and deletes this gateway's row. */
  stop(): Promise<void>;
}

function describe(others: OtherWriter[]): string {
  return others.map((o) => `${o.node_id} through "${o.wsrep_node_name}"`).join(', ');
}

/** Registers this gateway; throws a one-line error when other live gateways of this database write
 * through a different Galera node. */
export async function watchWriterNode(pool: Pool, nodeId: string, log: Logger): Promise<WriterNodeWatch> {
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
    // One server: there is no other node to write through, so no heartbeat (and no statements
    // in the benchmark's counts); the row says so until the gateway stops.
    return { node, stop: () => deleteGatewayNode(pool, nodeId).catch(() => {}) };
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
    // Rows refreshed since the previous beat that still name another node: a second writer.
    const others = node.wsrepOn ? (await otherWriters(pool, nodeId, node.nodeName!, LIVE_SECONDS, since)).filter((o) => o.fresh) : [];
    since = now;
    // Warned once per picture, and only when two beats in a row show it: during a failover a
    // gateway that has not reconnected yet may still name the old node for one beat.
    const seen = describe(others);
    if (others.length > 0 && seen === previous && seen !== warned) {
      log.warn({ wsrep_node_name: node.nodeName, others: seen }, 'gateways write through different Galera nodes: multi-writer is not supported');
      warned = seen;
    }
    if (others.length === 0) warned = '';
    previous = seen;
  };
  const timer = setInterval(() => {
    // A beat the database refused (failover in progress) is simply the next one's job.
    beat = beat.then(() => (stopped ? undefined : tick().catch(() => {})));
  }, WRITER_HEARTBEAT_MS);
  timer.unref();
  return {
    get node() {
      return node;
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await beat;
      await deleteGatewayNode(pool, nodeId).catch(() => {});
    },
  };
}
