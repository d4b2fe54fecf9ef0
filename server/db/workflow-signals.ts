// SQL operations on signals sent to runs, written under the run row's lock. The primary key
// (run_id, name) makes a second signal of a name a duplicate.
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn } from './pool.js';
import { placeholders } from './placeholders.js';
import type { RunRow } from './workflow-runs.js';

/** Signals sent before their step was reached: name → payload JSON. */
export async function readKeptSignals(c: Conn, runId: string): Promise<Map<string, string>> {
  const [rows] = await c.query<RowDataPacket[]>("SELECT name, payload FROM workflow_signals WHERE run_id = ? AND state = 'KEPT'", [runId]);
  return new Map(rows.map((r) => [r.name as string, r.payload as string]));
}

/** Whether a signal of that name was already accepted, kept or consumed. */
export async function signalSent(c: Conn, runId: string, name: string): Promise<boolean> {
  const [rows] = await c.query<RowDataPacket[]>('SELECT 1 FROM workflow_signals WHERE run_id = ? AND name = ?', [runId, name]);
  return rows.length > 0;
}

/** KEPT while its step is not reached, CONSUMED when its step succeeds with it in this
 * transaction. A second one of the name is ER_DUP_ENTRY. */
export async function insertSignal(
  c: Conn,
  run: Pick<RunRow, 'id' | 'namespace_id' | 'application_id'>,
  s: { name: string; stepKey: string; payload: unknown; state: 'KEPT' | 'CONSUMED' },
): Promise<void> {
  await c.execute(
    `INSERT INTO workflow_signals (run_id, name, namespace_id, application_id, payload, state, step_key, sent_at, consumed_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3), ${s.state === 'CONSUMED' ? 'UTC_TIMESTAMP(3)' : 'NULL'})`,
    [run.id, s.name, run.namespace_id, run.application_id, JSON.stringify(s.payload === undefined ? null : s.payload), s.state, s.stepKey],
  );
}

export async function consumeSignals(c: Conn, runId: string, names: string[]): Promise<void> {
  if (names.length === 0) return;
  const sql = `UPDATE workflow_signals SET state = 'CONSUMED', consumed_at = UTC_TIMESTAMP(3) WHERE run_id = ? AND name IN (${placeholders(names.length)})`;
  await c.query(sql, [runId, ...names]);
}
