// A scenario's warm-up (docs/benchmarks.md "How `npm run bench` measures"): before its measured window, a scenario runs part of its task
// count through the same gateway, worker and producer processes — submitted, claimed and completed
// the same way — and waits until it is drained. The unit u is measured after a warm-up
// (bench/baseline.ts); measured from a cold start, a scenario's CPU per task also held the
// processes' JIT compilation, which a long-running gateway and worker fleet pay once, not per
// task: the gateway's TurboFan threads were 26 % of its samples in a 6 000-task `unkeyed` run, JIT
// ~28 % of the SDK workers' samples in a quick `unkeyed-batch` (docs/benchmarks.md, "The gateway",
// "Workers and producers"). `--no-warmup` keeps the cold figure.
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../server/db/pool.js';

/** The warm-up's share of a scenario's task count in `npm run bench` (`--warmup=F` sets it,
 * `--no-warmup` makes it 0). A third keeps a quick run under 1.5× its cold duration: the
 * warm-up's tasks run at the cold speed, and each scenario's fixed costs (process start, the
 * latency reads) are not repeated. */
export const DEFAULT_WARMUP_FRACTION = 1 / 3;

/** Tasks of a scenario's warm-up: `fraction` of its count (at least 1 when the fraction is > 0). */
export function warmupCount(count: number, fraction: number): number {
  return fraction > 0 ? Math.max(1, Math.round(count * fraction)) : 0;
}

/** Reads `--warmup=F` / `--no-warmup` (F: a share of each scenario's tasks, 0 ≤ F ≤ 1). */
export function warmupFraction(argv: string[]): number {
  if (argv.includes('--no-warmup')) return 0;
  const given = argv.find((a) => a.startsWith('--warmup='))?.slice('--warmup='.length);
  if (given === undefined) return DEFAULT_WARMUP_FRACTION;
  const f = Number(given);
  if (!(f >= 0 && f <= 1)) throw new Error(`--warmup=${given}: a share of each scenario's tasks between 0 and 1 (--no-warmup = 0)`);
  return f;
}

/** Checks that the warm-up left nothing the window could claim — the queue holds exactly its
 * `expected` tasks, none WAITING, LEASED or RUNNING, and no waiting row — and returns the queue's
 * highest task `seq`: the window's tasks are those above it (seq is the table's AUTO_INCREMENT,
 * so a task inserted after this read gets a higher one). Read before the window's counters. */
export async function drainedWarmup(pool: Pool, queueId: string, expected: number): Promise<number> {
  const [states] = await pool.query<RowDataPacket[]>('SELECT state, COUNT(*) AS n, MAX(seq) AS top FROM tasks WHERE queue_id = ? GROUP BY state', [queueId]);
  const [waiting] = await pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM waiting_tasks WHERE queue_id = ?', [queueId]);
  const total = states.reduce((n, r) => n + Number(r.n), 0);
  const open = states.filter((r) => ['WAITING', 'LEASED', 'RUNNING'].includes(r.state as string));
  if (total !== expected || open.length > 0 || Number(waiting[0]!.n) > 0)
    throw new Error(`warm-up not drained: ${total} tasks of ${expected} (${states.map((r) => `${r.state} ${r.n}`).join(', ')}), ${waiting[0]!.n} waiting rows`);
  return states.reduce((top, r) => Math.max(top, Number(r.top ?? 0)), 0);
}
