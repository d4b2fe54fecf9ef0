// GET /metrics of a multi-process node: one scrape, whichever process the connection landed on,
// sees the node's totals, as a Prometheus job scraping one address per node expects. The primary
// merges every ready process's registry with its own. A process that does not answer in time fails
// the scrape rather than lowering the totals.
import type { Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { OrbitError } from '@orbit/protocol/errors';

const TIMEOUT_MS = 5_000;

type MetricsJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/** `id` pairs a reply with its ask. */
export type MetricsMessage =
  | { orbit: 'metrics?'; id: number }
  | { orbit: 'metrics'; id: number; text?: string; error?: string }
  | { orbit: 'metrics-json?'; id: number }
  | { orbit: 'metrics-json'; id: number; json?: MetricsJson; error?: string };

export function isMetricsMessage(m: unknown): m is MetricsMessage {
  const o = m as { orbit?: unknown; id?: unknown } | null;
  return typeof o?.orbit === 'string' && o.orbit.startsWith('metrics') && typeof o.id === 'number';
}

/** In a gateway process: answers the primary's asks, and returns what GET /metrics serves. */
export function metricsThroughPrimary(registry: Registry): () => Promise<string> {
  let seq = 0;
  const waiting = new Map<number, (answer: { text?: string; error?: string }) => void>();
  const send = (m: MetricsMessage) => {
    if (process.connected) process.send!(m);
  };
  process.on('message', (m: unknown) => {
    if (!isMetricsMessage(m)) return;
    if (m.orbit === 'metrics-json?') {
      registry.getMetricsAsJSON().then(
        (json) => send({ orbit: 'metrics-json', id: m.id, json }),
        (err: Error) => send({ orbit: 'metrics-json', id: m.id, error: err.message }),
      );
    } else if (m.orbit === 'metrics') waiting.get(m.id)?.(m);
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = ++seq;
      const settle = (a: { text?: string; error?: string }) => {
        clearTimeout(timer);
        waiting.delete(id);
        if (a.text !== undefined) resolve(a.text);
        else reject(new OrbitError('UNAVAILABLE', `metrics of the node's processes: ${a.error ?? 'no answer'}`));
      };
      const timer = setTimeout(() => settle({ error: 'the primary process did not answer' }), TIMEOUT_MS + 1_000);
      waiting.set(id, settle);
      send({ orbit: 'metrics?', id });
    });
}

export class MetricsAggregator {
  private seq = 0;
  private readonly pending = new Map<number, { left: Set<Worker>; got: MetricsJson[]; done: (err: string | null) => void }>();

  constructor(
    private readonly own: Registry,
    private readonly ready: () => Worker[],
  ) {}

  handle(from: Worker, m: MetricsMessage): void {
    if (m.orbit === 'metrics?') void this.answer(from, m.id);
    else if (m.orbit === 'metrics-json') {
      const p = this.pending.get(m.id);
      if (!p || !p.left.delete(from)) return;
      if (m.json) p.got.push(m.json);
      if (m.error) p.done(m.error);
      else if (p.left.size === 0) p.done(null);
    }
  }

  /** Asks stop waiting for a process that exited: its counters are gone with it. */
  forget(w: Worker): void {
    for (const p of this.pending.values()) if (p.left.delete(w) && p.left.size === 0) p.done(null);
  }

  private async answer(to: Worker, askId: number): Promise<void> {
    let reply: MetricsMessage;
    try {
      const id = ++this.seq;
      const got: MetricsJson[] = [await this.own.getMetricsAsJSON()];
      // Listed after that await, so a process that exits from here on is forgotten (forget()).
      const left = new Set(this.ready().filter((w) => w.isConnected()));
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => done(`${left.size} process(es) did not answer within ${TIMEOUT_MS} ms`), TIMEOUT_MS);
        const done = (err: string | null) => {
          clearTimeout(timer);
          this.pending.delete(id);
          if (err) reject(new Error(err));
          else resolve();
        };
        this.pending.set(id, { left, got, done });
        if (left.size === 0) done(null);
        for (const w of left) w.send({ orbit: 'metrics-json?', id } satisfies MetricsMessage);
      });
      reply = { orbit: 'metrics', id: askId, text: await AggregatorRegistry.aggregate(got).metrics() };
    } catch (err) {
      reply = { orbit: 'metrics', id: askId, error: (err as Error).message };
    }
    if (to.isConnected()) to.send(reply);
  }
}
