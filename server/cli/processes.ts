// ORBIT_PROCESSES=N > 1: one gateway node as N processes sharing its port, so a node uses N cores.
// This process becomes a node:cluster primary that runs no gateway itself and supervises N gateway
// processes, each a whole stateless node: every loop of a node is safe with any number of nodes on
// one database (docs/operations.md "Several processes per node"). A process that exits is restarted,
// and its sessions' attempts are recovered by the sweepers as after any node's crash.
import cluster, { type Worker } from 'node:cluster';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import client from 'prom-client';
import { processEnv, type Config } from '../config.js';
import { startGateway } from '../gateway-main.js';
import { isMetricsMessage, MetricsAggregator } from './cluster-metrics.js';
import { isWakeMessage } from './sibling-wakes.js';

export interface NodeHandle {
  url: string;
  /** A restarted process has its own. */
  processes: { pid: number; node_id: string }[];
  close(): Promise<void>;
}

export interface ReadyMessage {
  orbit: 'ready';
  url: string;
  node_id: string;
}

/** A process that dies sooner than this after its start is restarted with a growing backoff, so a
 * database that refuses every start is not hammered. */
const YOUNG_MS = 10_000;
const MAX_BACKOFF_MS = 30_000;

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
    // The primary's own process metrics count: it accepts every connection.
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
      // listening socket by the address asked for, so they all share the one the first bound.
      await Promise.all(this.slots.map((s) => this.fork(s)));
    } catch (err) {
      await this.close();
      throw err;
    }
    this.running = true;
    const processes = this.slots.filter((s) => s.ready && s.worker).map((s) => ({ pid: s.worker!.process.pid!, node_id: s.nodeId! }));
    return { url: this.url, processes, close: () => this.close() };
  }

  private readyWorkers(): Worker[] {
    return this.slots.filter((s) => s.ready && s.worker).map((s) => s.worker!);
  }

  /** Resolves when the process listens, rejects when it exits first. */
  private fork(s: Slot): Promise<void> {
    const w = cluster.fork(processEnv(this.config, s.n));
    s.worker = w;
    s.ready = false;
    s.nodeId = null;
    s.startedAt = Date.now();
    return new Promise<void>((resolve, reject) => {
      w.on('message', (m: unknown) => {
        if (isWakeMessage(m)) {
          for (const other of this.readyWorkers()) if (other !== w && other.isConnected()) other.send(m);
        } else if (isMetricsMessage(m)) this.metrics.handle(w, m);
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
      // A failed start is logged by the process; its exit comes back here with a longer wait.
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
      w.process.kill('SIGTERM');
    }
    await Promise.all(exits);
  }
}
