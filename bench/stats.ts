// Small statistics and database-status helpers for the benchmark.
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../server/db/pool.js';

export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** Counters from SHOW GLOBAL STATUS: Com_commit counts committed explicit transactions,
 * Innodb_os_log_fsyncs the redo-log fsyncs (durable commits share fsyncs by group commit). */
export async function globalStatus(pool: Pool): Promise<{ commits: number; fsyncs: number; autocommitWrites: number }> {
  const [rows] = await pool.query<RowDataPacket[]>(
    "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_commit','Innodb_os_log_fsyncs','Com_insert','Com_update','Handler_commit')",
  );
  const m = new Map(rows.map((r) => [r.Variable_name as string, Number(r.Value)]));
  return { commits: m.get('Com_commit') ?? 0, fsyncs: m.get('Innodb_os_log_fsyncs') ?? 0, autocommitWrites: m.get('Handler_commit') ?? 0 };
}

export function fmt(n: number, digits = 0): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '-';
}
