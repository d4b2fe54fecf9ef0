// Batch-shaped statements of the coalesced start and result transactions: one statement per table
// whatever the number of rows (IN lists and CASE columns, chunked only past the statement budget),
// each UPDATE naming its ids in a primary-key IN list, so the plan is a key lookup per row.
import type { RowDataPacket } from 'mysql2/promise';
import type { AttemptFields } from './attempts.js';
import type { WorkerRef } from './attempt-leases.js';
import type { Conn, Tx } from './pool.js';
import { write } from './pipeline.js';
import { chunkRows } from './packet-budget.js';
import type { AttemptState, TaskState } from '@orbit/protocol/states';
import { caseWhen, placeholderRows, placeholders } from './placeholders.js';

export type StartItem = WorkerRef & { attemptId: string; credentialId: string };

/** LEASED → RUNNING for each attempt still LEASED, owned by that worker under a live credential,
 * unexpired, its task current and before its deadline; the task goes RUNNING with attempts_made + 1
 * and the lease restarts: 2 rows per start. The clock is @orbit_now, left by the credential check
 * sent before it (liveCredentialsWithClockSql). Lease lengths are literals: a subquery on queues
 * would share-lock rows the batch's counter updates need. */
export function startAttemptsSql(items: StartItem[], leaseByQueue: Map<string, number>): [string, unknown[]] {
  const queues = [...leaseByQueue];
  const credentials = [...new Set(items.map((i) => i.credentialId))];
  return [
    `UPDATE attempts a JOIN tasks t ON t.id = a.task_id AND t.current_attempt_id = a.id
        JOIN credentials cr ON cr.id IN (${placeholders(credentials.length)}) AND cr.revoked_at IS NULL
          AND (a.id, a.namespace_id, a.worker_id, cr.id) IN (${placeholderRows(items.length, '(?, ?, ?, ?)')})
        SET a.state = 'RUNNING', a.started_at = @orbit_now,
            a.lease_expires_at = CAST(@orbit_now AS DATETIME(3)) + INTERVAL (${caseWhen('a.queue_id', queues.length)}) SECOND,
            t.state = 'RUNNING', t.attempts_made = t.attempts_made + 1, t.updated_at = @orbit_now
      WHERE a.id IN (${placeholders(items.length)})
        AND (a.id, a.namespace_id, a.worker_id) IN (${placeholderRows(items.length, '(?, ?, ?)')})
        AND a.queue_id IN (${placeholders(queues.length)})
        AND a.state = 'LEASED' AND a.lease_expires_at > @orbit_now AND t.deadline_at > @orbit_now`,
    [
      ...credentials,
      ...items.flatMap((i) => [i.attemptId, i.namespaceId, i.workerId, i.credentialId]),
      ...queues.flat(),
      ...items.map((i) => i.attemptId),
      ...items.flatMap((i) => [i.attemptId, i.namespaceId, i.workerId]),
      ...queues.map(([q]) => q),
    ],
  ];
}

/** The queue of each attempt (no lock); only those not in `known` (the session's held attempts)
 * are read, so a start or renew of held attempts usually costs no statement for it. */
export async function attemptQueues(c: Conn, ids: string[], known: ReadonlyMap<string, string> = new Map()): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const unknown: string[] = [];
  for (const id of ids) {
    const q = known.get(id);
    if (q) out.set(id, q);
    else unknown.push(id);
  }
  if (unknown.length === 0) return out;
  const [rows] = await c.query<RowDataPacket[]>(`SELECT id, queue_id FROM attempts WHERE id IN (${placeholders(unknown.length)})`, unknown);
  for (const r of rows) out.set(r.id as string, r.queue_id as string);
  return out;
}

export interface StartStateRow extends RowDataPacket, Pick<AttemptFields, 'id' | 'namespace_id' | 'worker_id' | 'state' | 'started_at' | 'lease_expires_at'> {
  /** 1 when lease_expires_at > now. */
  live: number;
}

/** The attempts of a start batch that did not all move, read back to answer each frame exactly. */
export async function readStartStates(c: Conn, ids: string[], now: string): Promise<StartStateRow[]> {
  const [rows] = await c.query<StartStateRow[]>(
    `SELECT id, namespace_id, worker_id, state, started_at, lease_expires_at, (lease_expires_at > ?) AS live FROM attempts WHERE id IN (${placeholders(ids.length)})`,
    [now, ...ids],
  );
  return rows;
}

/** An attempt and its task as a result needs them, both rows locked. */
// prettier-ignore
export interface ResultRow extends RowDataPacket, Pick<AttemptFields, 'id' | 'task_id' | 'namespace_id' | 'application_id' | 'queue_id' | 'state'
  | 'worker_id' | 'concurrency_key' | 'lease_expires_at' | 'result_fingerprint' | 'result_reply'> {
  live: number;
  t_state: TaskState;
  t_attempts_made: number;
  t_max_attempts: number;
  t_deadline_at: string;
  t_current_attempt_id: string | null;
  /** The task's workflow run and step (NULL on plain tasks): its run advances in this transaction. */
  t_workflow_run_id: string | null;
  t_workflow_step: string | null;
}

/** The attempts and their tasks, locked attempt then task (the order of every transaction that
 * changes both), `live` by @orbit_now (the credential check before it). Only rows of the batch's
 * namespaces: a frame naming another tenant's attempt must not lock its rows. */
export function lockResultRowsSql(ids: string[], namespaces: string[]): [string, unknown[]] {
  return [
    `SELECT a.id, a.task_id, a.namespace_id, a.application_id, a.queue_id, a.state, a.worker_id, a.concurrency_key, a.lease_expires_at,
            a.result_fingerprint, a.result_reply, (a.lease_expires_at > @orbit_now) AS live,
            t.state AS t_state, t.attempts_made AS t_attempts_made, t.max_attempts AS t_max_attempts, t.deadline_at AS t_deadline_at,
            t.current_attempt_id AS t_current_attempt_id, t.workflow_run_id AS t_workflow_run_id, t.workflow_step AS t_workflow_step
       FROM attempts a JOIN tasks t ON t.id = a.task_id
      WHERE a.id IN (${placeholders(ids.length)}) AND a.namespace_id IN (${placeholders(namespaces.length)})
      FOR UPDATE`,
    [...ids, ...namespaces],
  ];
}

export interface ClosedAttempt {
  id: string;
  state: AttemptState;
  outcome: string | null;
  output: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  fingerprint: string | null;
  reply: string | null;
  /** A result: a never-started attempt counts as started now. */
  started: boolean;
}

/** One column of a multi-row update: `column = CASE id WHEN ? THEN ? … END` with its arguments;
 * `orElse` is the value of the rows not listed. */
function caseOf<T extends { id: string }>(rows: T[], column: string, value: (r: T) => unknown, orElse?: string): { sql: string; args: unknown[] } {
  return { sql: `${column} = ${caseWhen('id', rows.length, orElse)}`, args: rows.flatMap((r) => [r.id, value(r)]) };
}

/** The ended attempts (row locks held), one UPDATE with a CASE per column per chunk; started_at is
 * now for a result's never-started attempt. CASE, not JSON_TABLE: MariaDB 10.11 crashes on an
 * UPDATE … JOIN JSON_TABLE under load. */
export async function closeAttempts(c: Tx, rows: ClosedAttempt[], now: string): Promise<void> {
  for (const chunk of chunkRows(c, rows, closedValues)) await write(c, ...closeAttemptsSql(chunk, now));
}

export function closeAttemptsSql(chunk: ClosedAttempt[], now: string): [string, unknown[]] {
  const columns: [string, (r: ClosedAttempt) => unknown][] = [
    ['state', (r) => r.state],
    ['outcome', (r) => r.outcome],
    ['output', (r) => r.output],
    ['error_code', (r) => r.errorCode],
    ['error_message', (r) => r.errorMessage],
    ['result_fingerprint', (r) => r.fingerprint],
    ['result_reply', (r) => r.reply],
    ['started_at', (r) => (r.started ? now : null)],
  ];
  const cols = columns.map(([column, v]) => caseOf(chunk, column, v));
  // started_at: the CASE gives now for a result and NULL otherwise, kept by COALESCE when set.
  cols[cols.length - 1]!.sql = `started_at = COALESCE(started_at, ${cols[cols.length - 1]!.sql.replace(/^started_at = /, '')})`;
  return [
    `UPDATE attempts SET ${cols.map((x) => x.sql).join(', ')}, finished_at = ?
        WHERE id IN (${placeholders(chunk.length)})`,
    [...cols.flatMap((x) => x.args), now, ...chunk.map((r) => r.id)],
  ];
}

/** Every value the CASE form carries for a row, for the statement budget (a flat literal: it runs per row). */
const closedValues = (r: ClosedAttempt) => [
  r.id,
  r.id,
  r.state,
  r.id,
  r.outcome,
  r.id,
  r.output,
  r.id,
  r.errorCode,
  r.id,
  r.errorMessage,
  r.id,
  r.fingerprint,
  r.id,
  r.reply,
  r.id,
  r.started,
];

export interface EndedTask {
  id: string;
  state: TaskState;
  attemptsMade: number;
  /** WAITING (retry): the new not_before; else null. */
  notBefore: string | null;
  /** Terminal or review: the result columns; WAITING: null (the columns are cleared). */
  result: { outcome: string; output: string | null; errorCode: string | null; errorMessage: string | null } | null;
  /** Terminal: finished_at = now. */
  terminal: boolean;
}

/** The tasks an attempt's end or a task command moved (row locks held), one UPDATE with a CASE per
 * column per chunk; current_attempt_id cleared. A task back to WAITING gets its not_before and its
 * result cleared (its waiting row is the ledger's); the others get their result. */
export async function updateEndedTasks(c: Tx, rows: EndedTask[], now: string): Promise<void> {
  // A row's id appears in at most 7 CASEs and the IN list.
  const valuesOf = (r: EndedTask) => {
    const x = r.result;
    return [r.id, r.id, r.id, r.id, r.id, r.id, r.id, r.id, r.state, r.attemptsMade, now, r.notBefore, x?.outcome, x?.output, x?.errorCode, x?.errorMessage];
  };
  for (const chunk of chunkRows(c, rows, valuesOf)) {
    const waiting = chunk.filter((r) => !r.result);
    const cols = [
      caseOf(chunk, 'state', (r) => r.state),
      caseOf(chunk, 'attempts_made', (r) => r.attemptsMade),
      caseOf(chunk, 'finished_at', (r) => (r.terminal ? now : null)),
      // Only the tasks back to WAITING: the others keep theirs.
      ...(waiting.length ? [caseOf(waiting, 'not_before', (r) => r.notBefore, 'not_before')] : []),
      caseOf(chunk, 'result_outcome', (r) => r.result?.outcome ?? null),
      caseOf(chunk, 'result_output', (r) => r.result?.output ?? null),
      caseOf(chunk, 'result_error_code', (r) => r.result?.errorCode ?? null),
      caseOf(chunk, 'result_error_message', (r) => r.result?.errorMessage ?? null),
    ];
    await write(
      c,
      `UPDATE tasks SET ${cols.map((x) => x.sql).join(', ')}, current_attempt_id = NULL, updated_at = ?
        WHERE id IN (${placeholders(chunk.length)})`,
      [...cols.flatMap((x) => x.args), now, ...chunk.map((r) => r.id)],
    );
  }
}
