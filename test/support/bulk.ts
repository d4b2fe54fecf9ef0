// Bulk task submission through real HTTP, with retries on 503 (same Idempotency-Key).
import { call } from './http.js';

export async function submitMany(
  url: string | (() => string),
  token: string,
  tasks: Record<string, unknown>[],
  opts: { concurrency?: number; keyPrefix?: string; stats?: SubmitStats } = {},
): Promise<string[]> {
  const stats = opts.stats;
  const ids: string[] = new Array(tasks.length);
  let next = 0;
  const prefix = opts.keyPrefix ?? `bulk-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= tasks.length) return;
      for (let attempt = 0; ; attempt++) {
        const base = typeof url === 'function' ? url() : url;
        try {
          const r = await call(base, 'POST', '/v1/tasks', { token, key: `${prefix}-${i}`, body: tasks[i] });
          if (r.status === 201 || r.status === 200) {
            ids[i] = r.body.data.task.id;
            if (stats) {
              stats[r.status === 201 ? 'created' : 'replayed']++;
              if (attempt > 0 && r.status === 201) stats.createdOnRetry++;
              stats.okAt.push(Date.now());
            }
            break;
          }
          if (r.status !== 503 || attempt > 200) throw new Error(`submit ${i}: ${r.status} ${r.text}`);
          if (stats) {
            stats.unavailable++;
            stats.unavailableAt.push(Date.now());
          }
        } catch (err) {
          if (attempt > 200 || !(err instanceof TypeError)) throw err; // TypeError = fetch failed (node down)
          if (stats) stats.fetchFailed++;
        }
        if (stats) stats.retries++;
        await new Promise((res) => setTimeout(res, 50));
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 16 }, worker));
  return ids;
}

/** What submitMany saw, for a chaos test's figures: 201 created (createdOnRetry of them after a
 * refusal), 200 replayed (the same Idempotency-Key found its committed task), 503 answers, fetches
 * that failed (gateway down), retries (one per 503 or failed fetch). */
export interface SubmitStats {
  created: number;
  createdOnRetry: number;
  replayed: number;
  unavailable: number;
  fetchFailed: number;
  retries: number;
  /** Times (ms since epoch) of every 2xx and every 503. */
  okAt: number[];
  unavailableAt: number[];
}

export function newSubmitStats(): SubmitStats {
  return { created: 0, createdOnRetry: 0, replayed: 0, unavailable: 0, fetchFailed: 0, retries: 0, okAt: [], unavailableAt: [] };
}

/** `n` no-op task bodies for handler `h@v1` on one queue; `keyOf(i)` gives task i's resource key
 * (or undefined for an unkeyed task). */
export function taskBodies(queueId: string, n: number, keyOf: (i: number) => string | undefined = () => undefined): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) => {
    const key = keyOf(i);
    return {
      queue_id: queueId,
      handler: 'h',
      handler_version: 'v1',
      payload_version: 'v1',
      payload: { i },
      ...(key === undefined ? {} : { concurrency_key: key }),
    };
  });
}
