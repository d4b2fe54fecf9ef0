// Runs and run steps by state, read from the database at scrape time: counting on the node that
// committed would miss the other nodes' advancements. Cached briefly to bound what scrapes cost.
import client from 'prom-client';
import type { Pool } from './db/pool.js';
import { countRunsByState } from './db/workflow-runs.js';
import { countStepsByState } from './db/workflow-run-steps.js';
import type { Metrics } from './metrics.js';

const CACHE_MS = 5_000;

export function registerWorkflowGauges(metrics: Metrics, pool: Pool): void {
  const gauge = (name: string, help: string, read: (p: Pool) => Promise<{ state: string; n: number }[]>) => {
    let cached: { at: number; rows: { state: string; n: number }[] } | null = null;
    const g: client.Gauge<'state'> = new client.Gauge({
      name,
      help,
      labelNames: ['state'],
      registers: [metrics.registry],
      async collect() {
        if (!cached || Date.now() - cached.at >= CACHE_MS) {
          const rows = await read(pool).catch(() => null);
          if (!rows) return; // database unreachable: keep the last values rather than fail the scrape
          cached = { at: Date.now(), rows };
        }
        g.reset();
        for (const r of cached.rows) g.set({ state: r.state }, r.n);
      },
    });
  };
  gauge('orbit_workflow_runs_total', 'workflow runs by state (all nodes; from the database at scrape time)', countRunsByState);
  gauge('orbit_workflow_steps_total', 'workflow run steps by state (all nodes; from the database at scrape time)', countStepsByState);
}
