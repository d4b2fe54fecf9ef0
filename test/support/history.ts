// Checks over the recorded attempt history (SQL), shared by the chaos and invariant tests.
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../../server/db/pool.js';

export interface HistoryReport {
  tasks: number;
  byState: Record<string, number>;
  violations: string[];
}

/** Mutual exclusion and strictly increasing tokens per key; at most one SUCCEEDED attempt per task. */
export async function checkHistory(pool: Pool, namespaceId?: string): Promise<HistoryReport> {
  const violations: string[] = [];
  const nsFilter = namespaceId ? 'WHERE namespace_id = ?' : '';
  const args = namespaceId ? [namespaceId] : [];
  const [states] = await pool.query<RowDataPacket[]>(`SELECT state, COUNT(*) AS n FROM tasks ${nsFilter} GROUP BY state`, args);
  const byState: Record<string, number> = {};
  let tasks = 0;
  for (const r of states) {
    byState[r.state as string] = Number(r.n);
    tasks += Number(r.n);
  }
  const [dups] = await pool.query<RowDataPacket[]>(
    `SELECT task_id, COUNT(*) AS n FROM attempts ${nsFilter} ${nsFilter ? 'AND' : 'WHERE'} state = 'SUCCEEDED' GROUP BY task_id HAVING n > 1`,
    args,
  );
  for (const d of dups) violations.push(`task ${d.task_id} has ${d.n} SUCCEEDED attempts`);
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT namespace_id, HEX(concurrency_key) AS k, id, concurrency_token, leased_at, finished_at, state
       FROM attempts ${nsFilter} ${nsFilter ? 'AND' : 'WHERE'} concurrency_key IS NOT NULL
      ORDER BY namespace_id, concurrency_key, concurrency_token + 0`,
    args,
  );
  let prev: RowDataPacket | null = null;
  for (const r of rows) {
    if (prev && prev.namespace_id === r.namespace_id && prev.k === r.k) {
      if (BigInt(r.concurrency_token) <= BigInt(prev.concurrency_token))
        violations.push(`key ${r.k}: token ${r.concurrency_token} not above ${prev.concurrency_token}`);
      if (prev.finished_at === null) violations.push(`key ${r.k}: attempt ${r.id} (token ${r.concurrency_token}) granted while ${prev.id} still live`);
      else if (String(r.leased_at) < String(prev.finished_at)) {
        violations.push(`key ${r.k}: attempt ${r.id} leased at ${r.leased_at} before ${prev.id} finished at ${prev.finished_at}`);
      }
    }
    prev = r;
  }
  return { tasks, byState, violations };
}

/** The worker-side view (SDK worker processes run with WORKER_LOG_RUNS=1): per key, handler runs
 * as closed intervals from each process's 'run'/'done' lines; a run a killed process never
 * finished lasted until its kill (`killedAt`, ms since epoch). Returns the tasks whose run finished
 * and one violation per pair of overlapping runs of one key. */
export function keyedRunOverlaps(
  processes: { lines: { ev?: string; attempt?: string; key?: string; task?: string; t?: number }[] }[],
  killedAt: Map<unknown, number> = new Map(),
): { doneTasks: Set<string>; violations: string[] } {
  const runs = new Map<string, { s: number; e: number; attempt: string }[]>();
  const add = (key: string, s: number, e: number, attempt: string) => runs.set(key, [...(runs.get(key) ?? []), { s, e, attempt }]);
  const doneTasks = new Set<string>();
  for (const w of processes) {
    const open = new Map<string, { key: string; s: number }>();
    for (const l of w.lines) {
      if (l.ev === 'run' && l.key && l.attempt) open.set(l.attempt, { key: l.key, s: l.t! });
      if (l.ev === 'done' && l.attempt && open.has(l.attempt)) {
        const o = open.get(l.attempt)!;
        open.delete(l.attempt);
        add(o.key, o.s, l.t!, l.attempt);
        doneTasks.add(l.task!);
      }
    }
    const k = killedAt.get(w);
    if (k !== undefined) for (const [attempt, o] of open) add(o.key, o.s, k, attempt);
  }
  const violations: string[] = [];
  for (const [key, list] of runs) {
    list.sort((x, y) => x.s - y.s);
    for (let i = 1; i < list.length; i++) {
      if (list[i]!.s < list[i - 1]!.e) violations.push(`key ${key}: run of ${list[i]!.attempt} started before ${list[i - 1]!.attempt}'s ended`);
    }
  }
  return { doneTasks, violations };
}
