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
