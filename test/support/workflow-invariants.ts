// The invariants of docs/workflows.md, checked over the database after a test's load (every run of a
// namespace, or of the whole database). Returns the violations, each naming its run and step, so a
// failing test says what broke.
import type { Pool, RowDataPacket } from 'mysql2/promise';

const FINISHED = new Set(['SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED']);
const UNFINISHED_TASK = new Set(['WAITING', 'LEASED', 'RUNNING', 'NEEDS_REVIEW']);

export async function workflowViolations(pool: Pool, namespaceId?: string): Promise<string[]> {
  const where = namespaceId ? 'WHERE r.namespace_id = ?' : '';
  const args = namespaceId ? [namespaceId] : [];
  const [runs] = await pool.query<RowDataPacket[]>(
    `SELECT r.id, r.state, v.steps, v.queue_ids FROM workflow_runs r JOIN workflow_versions v ON v.workflow_id = r.workflow_id AND v.number = r.version ${where}`,
    args,
  );
  const out: string[] = [];
  for (const run of runs) {
    const steps = JSON.parse(run.steps as string) as { key: string; after: string[]; task?: unknown; for_each?: string }[];
    const [rows] = await pool.query<RowDataPacket[]>(
      'SELECT step_key, state, ready_cause, task_count, started_at, finished_at FROM workflow_run_steps WHERE run_id = ?',
      [run.id],
    );
    const byKey = new Map(rows.map((r) => [r.step_key as string, r]));
    const [tasks] = await pool.query<RowDataPacket[]>(
      `SELECT t.id, t.state, t.workflow_step, COALESCE(t.workflow_index, 0) AS idx, st.task_id AS guarded
         FROM tasks t LEFT JOIN workflow_step_tasks st ON st.task_id = t.id WHERE t.workflow_run_id = ?`,
      [run.id],
    );
    const perElement = new Map<string, number>();
    for (const t of tasks) {
      const k = `${t.workflow_step}/${t.idx}`;
      perElement.set(k, (perElement.get(k) ?? 0) + 1);
      if (!t.guarded) out.push(`run ${run.id}: task ${t.id} has no workflow_step_tasks row`);
    }
    // 1. Exactly once: at most one task per (run, step, index), and tasks exactly for started task steps.
    for (const [k, n] of perElement) if (n > 1) out.push(`run ${run.id}: ${n} tasks for ${k}`);
    for (const s of steps) {
      const r = byKey.get(s.key);
      if (!r) {
        out.push(`run ${run.id}: no row for step ${s.key}`);
        continue;
      }
      const mine = tasks.filter((t) => t.workflow_step === s.key);
      if (r.started_at === null && mine.length > 0) out.push(`run ${run.id}: step ${s.key} not started but has ${mine.length} tasks`);
      if (s.task && r.started_at !== null && ['ACTIVE', 'IN_REVIEW'].includes(r.state) && mine.length !== Number(r.task_count)) {
        out.push(`run ${run.id}: step ${s.key} counts ${r.task_count} tasks, has ${mine.length}`);
      }
      // 3. No step started before its parents finished.
      if (r.started_at !== null) {
        for (const p of s.after) {
          const pr = byKey.get(p)!;
          if (!FINISHED.has(pr.state) || pr.finished_at === null || pr.finished_at > r.started_at)
            out.push(`run ${run.id}: step ${s.key} started before parent ${p} finished`);
        }
      }
      // A decision never missed: a PENDING step whose parents all finished (on an unfinished run).
      if (r.state === 'PENDING' && (run.state === 'RUNNING' || run.state === 'PAUSED') && s.after.every((p) => FINISHED.has(byKey.get(p)!.state))) {
        out.push(`run ${run.id}: step ${s.key} PENDING with every parent finished`);
      }
    }
    // 2. No stuck run.
    if (run.state === 'RUNNING') {
      const advancing =
        tasks.some((t) => UNFINISHED_TASK.has(t.state)) ||
        rows.some((r) => r.state === 'WAITING_SIGNAL' || r.state === 'IN_REVIEW' || r.ready_cause === 'quota');
      if (!advancing) out.push(`run ${run.id}: RUNNING with nothing that can advance it`);
    }
    if (run.state !== 'RUNNING' && run.state !== 'PAUSED' && rows.some((r) => !FINISHED.has(r.state)))
      out.push(`run ${run.id}: ${run.state} with an unfinished step`);
    // 4. Pinned queues: an unfinished run's queues are not retired.
    if (run.state === 'RUNNING' || run.state === 'PAUSED') {
      const ids = JSON.parse(run.queue_ids as string) as string[];
      if (ids.length > 0) {
        const [retired] = await pool.query<RowDataPacket[]>(
          `SELECT id FROM queues WHERE id IN (${ids.map(() => '?').join(',')}) AND retired_at IS NOT NULL`,
          ids,
        );
        for (const q of retired) out.push(`run ${run.id}: queue ${q.id} retired while the run is ${run.state}`);
      }
    }
  }
  // 5. Keys: no two attempts of one key share a token, and tokens follow the grant order.
  const [dup] = await pool.query<RowDataPacket[]>(
    `SELECT a.namespace_id, a.concurrency_key, a.concurrency_token, COUNT(*) AS n FROM attempts a JOIN tasks t ON t.id = a.task_id
      WHERE t.workflow_run_id IS NOT NULL AND a.concurrency_key IS NOT NULL ${namespaceId ? 'AND a.namespace_id = ?' : ''}
      GROUP BY a.namespace_id, a.concurrency_key, a.concurrency_token HAVING COUNT(*) > 1`,
    args,
  );
  for (const d of dup) out.push(`key ${String(d.concurrency_key)}: token ${d.concurrency_token} granted ${d.n} times`);
  return out;
}
