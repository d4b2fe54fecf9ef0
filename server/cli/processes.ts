// ORBIT_PROCESSES=N: one gateway node as N processes sharing its port, so a node uses N cores.
// N = 1 is the node as it always was: startGateway in this process, nothing else. N > 1: this
// process becomes the primary of a node:cluster and runs no gateway itself; it forks N gateway
// processes (server/cli/gateway-process.ts), each a whole stateless node as today — its own
// node_id in worker_sessions, its own pool, dispatcher, sweeper, reconciler, schedule firer and
// event pruner, all of which are safe with any number of nodes on one database (docs/design.md
// "Cross-node effects"). The listening socket is the primary's; node:cluster hands each accepted
// connection to the next process in turn (round-robin, the Linux default), so HTTP keep-alive
// connections and WebSocket sessions spread over the processes; the primary also passes each
// process's wake-ups on to the others (server/cli/sibling-wakes.ts). The primary supervises: a process
// that exits is restarted (a log line; backoff when it keeps dying young), its sessions' attempts
// are recovered by the sweepers as after any node's crash; stop() drains every process (SIGTERM:
// each closes as a single node does) and resolves when all have exited.
import cluster, { type Worker } from 'node:cluster';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import client from 'prom-client';
import { processEnv, type Config } from '../config.js';
import { startGateway } from '../gateway-main.js';
import { isMetricsMessage, MetricsAggregator } from './cluster-metrics.js';
import { forwardWakes, isWakeMessage } from './sibling-wakes.js';

export interface NodeHandle {
  url: string;
  /** One per process (one when ORBIT_PROCESSES=1); a restarted process has its own. */
  processes: { pid: number; node_id: string }[];
  close(): Promise<void>;
}

/** What a gateway process tells its primary once it listens. */
export interface ReadyMessage {
  orbit: 'ready';
  url: string;
  node_id: string;
}

/** A process that dies sooner than this after its start counts as dying young: its restart waits
 * 0.5 s, doubling per young death up to 30 s (a database that refuses every start is not hammered). */
const YOUNG_MS = 10_000;
const MAX_BACKOFF_MS = 30_000;

/** Starts the node: in this process (ORBIT_PROCESSES=1) or as a supervised cluster. */
export async function startNode(config: Config, log: Logger): Promise<NodeHandle> {
  if (config.processes === 1) {
    const gw = await startGateway(config);
    return { url: gw.url, processes: [{ pid: process.pid, node_id: config.nodeId }], close: () => gw.close() };
  }
  return new Supervisor(config, log).start();
}

interface Slot {
  n: number;
  worker: Worker | null;
  nodeId: string | null;
  startedAt: number;
  ready: boolean;
  youngDeaths: number;
  timer: NodeJS.Timeout | null;
}

class Supervisor {
  private readonly slots: Slot[];
  private url = '';
  private running = false;
  private stopping = false;
  private readonly registry = new client.Registry();
  private readonly restarts: client.Counter;
  private readonly metrics: MetricsAggregator;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
  ) {
    this.slots = Array.from({ length: config.processes }, (_, i) => ({
      n: i + 1,
      worker: null,
      nodeId: null,
      startedAt: 0,
      ready: false,
      youngDeaths: 0,
      timer: null,
    }));
    // The primary's own share of the node's /metrics: its process figures (it accepts every
    // connection), how many gateway processes serve, how many were restarted.
    client.collectDefaultMetrics({ register: this.registry });
    const ready = () => this.slots.filter((s) => s.ready).length;
    new client.Gauge({
      name: 'orbit_gateway_processes',
      help: 'gateway processes of this node serving now (ORBIT_PROCESSES > 1; absent with one process)',
      registers: [this.registry],
      collect() {
        this.set(ready());
      },
    });
    this.restarts = new client.Counter({
      name: 'orbit_gateway_process_restarts_total',
      help: "gateway processes of this node that exited unexpectedly and were restarted by the node's primary process",
      registers: [this.registry],
    });
    this.metrics = new MetricsAggregator(this.registry, () => this.readyWorkers());
    cluster.setupPrimary({ exec: fileURLToPath(new URL('./gateway-process.js', import.meta.url)) });
  }

  async start(): Promise<NodeHandle> {
    try {
      // Every process is given the configured address, `:0` included: node:cluster keys the
      // listening socket by the address asked for, so they all share the one the first bound
      // (the port changes only if every process dies at once).
      await Promise.all(this.slots.map((s) => this.fork(s)));
    } catch (err) {
      await this.close();
      throw err;
    }
    this.running = true;
    return { url: this.url, processes: this.live(), close: () => this.close() };
  }

  private readyWorkers(): Worker[] {
    return this.slots.filter((s) => s.ready && s.worker).map((s) => s.worker!);
  }

  private live(): { pid: number; node_id: string }[] {
    return this.slots.filter((s) => s.ready && s.worker).map((s) => ({ pid: s.worker!.process.pid!, node_id: s.nodeId! }));
  }

  /** Forks the slot's process; resolves when it listens, rejects when it exits first. */
  private fork(s: Slot): Promise<void> {
    const w = cluster.fork(processEnv(this.config, s.n));
    s.worker = w;
    s.ready = false;
    s.nodeId = null;
    s.startedAt = Date.now();
    return new Promise<void>((resolve, reject) => {
      w.on('message', (m: unknown) => {
        if (isWakeMessage(m)) forwardWakes(w, m, this.readyWorkers());
        else if (isMetricsMessage(m)) this.metrics.handle(w, m);
        else if ((m as ReadyMessage | null)?.orbit === 'ready' && !s.ready) {
          const r = m as ReadyMessage;
          s.ready = true;
          s.nodeId = r.node_id;
          this.url ||= r.url;
          if (this.running) this.log.info({ process: s.n, pid: w.process.pid, node_id: r.node_id }, 'gateway process restarted');
          resolve();
        }
      });
      w.on('exit', (code, signal) => {
        const wasReady = s.ready;
        s.ready = false;
        if (s.worker === w) s.worker = null;
        this.metrics.forget(w);
        if (!wasReady) reject(new Error(`gateway process ${s.n} exited while starting (${signal ?? `code ${code}`})`));
        if (this.running && !this.stopping) this.restart(s, w, code, signal);
      });
    });
  }

  private restart(s: Slot, w: Worker, code: number | null, signal: string | null): void {
    const young = Date.now() - s.startedAt < YOUNG_MS;
    s.youngDeaths = young ? s.youngDeaths + 1 : 0;
    const delay = young ? Math.min(MAX_BACKOFF_MS, 500 * 2 ** (s.youngDeaths - 1)) : 0;
    this.restarts.inc();
    this.log.warn(
      { process: s.n, pid: w.process.pid, node_id: s.nodeId, exit_code: code, signal, restart_in_ms: delay },
      'gateway process exited; restarting it (its sessions are recovered by the sweepers)',
    );
    s.timer = setTimeout(() => {
      s.timer = null;
      if (this.stopping) return;
      // A failed start is logged by the process itself; its exit comes back here with a longer wait.
      this.fork(s).catch(() => {});
    }, delay);
  }

  private async close(): Promise<void> {
    this.stopping = true;
    const exits: Promise<void>[] = [];
    for (const s of this.slots) {
      if (s.timer) clearTimeout(s.timer);
      const w = s.worker;
      if (!w || w.isDead()) continue;
      exits.push(new Promise<void>((resolve) => w.once('exit', () => resolve())));
      // Each process drains as a single node does on SIGTERM (goaway, in-flight transactions).
      w.process.kill('SIGTERM');
    }
    await Promise.all(exits);
  }
}
