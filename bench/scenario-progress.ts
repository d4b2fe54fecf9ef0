// How far a scenario's processes got (bench/scenario.ts, bench/workflow-load.ts): every progress
// line of a producer or worker marks an advance, and the wait for the scenario's end fails on a
// stall or a worker process that died, instead of hanging.
import type { WorkerProc } from './procs.js';

export class ScenarioProgress {
  private lastChange = Date.now();
  private onAdvance = () => {};

  /** Called whenever a process reports progress (passed to spawnWorkers/spawnProducers). */
  readonly advanced = (): void => {
    this.lastChange = Date.now();
    this.onAdvance();
  };

  /** Resolves once `done()` holds (checked at every advance). Rejects when `feeding` (the
   * producers, the run starts) fails, a worker process exits, or nothing advanced for `stallMs`:
   * `where()` says how far it got, for the error. */
  async until(done: () => boolean, o: { feeding: Promise<unknown>; workers: WorkerProc[]; stallMs: number; name: string; where: () => string }): Promise<void> {
    let stall: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        o.feeding.catch(reject);
        for (const w of o.workers) void w.exited.then(() => reject(new Error(`worker process ${w.child.pid} exited during the run`)));
        stall = setInterval(() => {
          if (Date.now() - this.lastChange > o.stallMs) reject(new Error(`${o.name}: no progress for ${o.stallMs / 1000} s (${o.where()})`));
        }, 1000);
        this.onAdvance = () => {
          if (done()) resolve();
        };
        this.onAdvance();
      });
    } finally {
      clearInterval(stall);
      this.onAdvance = () => {};
    }
  }
}
