// The tasks of a result transaction (dispatch/frame-committer.ts) in one UPDATE: the results'
// tasks (to a terminal state, NEEDS_REVIEW or back to WAITING) and, when the same transaction
// hands a released key or a freed slot to a next task (dispatch/handoff.ts, refill.ts), those next
// tasks LEASED with their new attempt. They were two UPDATEs of `tasks` in the same transaction
// (the results' and the grant's, db/claim-sql.ts markTasksLeased); one statement less per
// hand-off or refill transaction — ~70 % of mariadbd's CPU per task is per-statement work
// (docs/benchmarks.md, "Where mariadbd's CPU goes", and "Fewer statements in the result
// transaction"). The caller holds every row's lock (the results' locking read, the successors'
// and candidates' SKIP LOCKED reads), so writing the results' tasks later in the transaction
// changes no lock order.
import type { TaskState } from '@orbit/protocol/states';
import type { Tx } from './pool.js';
import { write } from './pipeline.js';
import { chunkRows } from './packet-budget.js';
import { caseOf } from './attempt-batches.js';
import { enterWaiting, leaveWaiting, type WaitingKey } from './waiting-tasks.js';
import { placeholders } from './placeholders.js';

export interface TaskAfterResult {
  id: string;
  state: TaskState;
  attemptsMade: number;
  /** WAITING (retry): the new not_before; else null. */
  notBefore: string | null;
  /** Terminal or review: the result columns (set); WAITING: left as they are. */
  result: { outcome: string; output: string | null; errorCode: string | null; errorMessage: string | null } | null;
  /** Terminal: finished_at = now. */
  terminal: boolean;
}

/** A task granted in the same transaction (markTasksLeased's row): LEASED with its attempt, its
 * waiting row deleted. */
export interface LeasedTask {
  taskId: string;
  attemptId: string;
  waiting: WaitingKey;
}

/** A CASE over some rows only: the other rows keep the column's value (ELSE column). */
function caseOfSome<T>(rows: T[], id: (r: T) => string, value: (r: T) => unknown, column: string): { sql: string; args: unknown[] } {
  const c = caseOf(rows, id, value, column);
  return { sql: c.sql.replace(/ END$/, ` ELSE ${column} END`), args: c.args };
}

type Row = { finished: TaskAfterResult } | { leased: LeasedTask };
const idOf = (r: Row) => ('finished' in r ? r.finished.id : r.leased.taskId);

/** Every value a row carries in the CASE form (its id in every CASE and in the IN list), for the
 * statement budget. */
function valuesOf(r: Row): unknown[] {
  if ('leased' in r) return [r.leased.taskId, r.leased.taskId, r.leased.taskId, r.leased.taskId, r.leased.attemptId];
  const f = r.finished;
  const x = f.result;
  return [f.id, f.id, f.id, f.id, f.id, f.id, f.id, f.id, f.id, f.state, f.attemptsMade, f.notBefore, x?.outcome, x?.output, x?.errorCode, x?.errorMessage];
}

/** updateTasksAfterResults(finished, now, leased): one UPDATE of `tasks` for the results' tasks and
 * the tasks granted in the same transaction (one per chunk of rows when their values exceed the
 * statement budget: db/packet-budget.ts). A finished task gets its state, attempts_made and
 * current_attempt_id cleared; back to WAITING (a retry) its new not_before, keeping its result
 * columns, and its waiting row (one INSERT … SELECT); otherwise its result, keeping its not_before.
 * A leased task gets state LEASED, attempts_created + 1 and its attempt, and its waiting row is
 * deleted — what markTasksLeased writes. A task may not be in both lists. The caller holds the
 * rows' locks. */
export async function updateTasksAfterResults(c: Tx, finished: TaskAfterResult[], now: string, leased: LeasedTask[] = []): Promise<void> {
  const rows: Row[] = [...finished.map((f) => ({ finished: f })), ...leased.map((l) => ({ leased: l }))];
  if (new Set(rows.map(idOf)).size !== rows.length) throw new Error('a task both finished and leased in one statement');
  for (const chunk of chunkRows(c, rows, valuesOf)) await write(c, ...taskUpdateSql(chunk, now));
  // Tasks back to WAITING (a retry) are claimable again, at their new not_before.
  await enterWaiting(
    c,
    finished.filter((r) => r.state === 'WAITING').map((r) => r.id),
  );
  await leaveWaiting(
    c,
    leased.map((l) => l.waiting),
  );
}

/** The UPDATE of one chunk: a lone finished task as a plain UPDATE by primary key (each value
 * once: 510 against 912 bytes and less of mariadbd per statement, closeOneAttemptSql's measure);
 * otherwise a CASE per column over the chunk's rows, `WHERE id IN (…)` (two ids and more: a
 * `range` read of the primary key, test/statement-plans.test.ts). */
export function taskUpdateSql(chunk: Row[], now: string): [string, unknown[]] {
  const finished = chunk.flatMap((r) => ('finished' in r ? [r.finished] : []));
  const leased = chunk.flatMap((r) => ('leased' in r ? [r.leased] : []));
  if (chunk.length === 1 && finished.length === 1) return updateOneTaskAfterResultSql(finished[0]!, now);
  const fid = (r: TaskAfterResult) => r.id;
  const lid = (r: LeasedTask) => r.taskId;
  const waiting = finished.filter((r) => !r.result);
  const results = finished.filter((r) => r.result);
  const state = caseOf(chunk, idOf, (r) => ('finished' in r ? r.finished.state : 'LEASED'), 'state');
  const cols = [
    state,
    ...(finished.length
      ? [caseOfSome(finished, fid, (r) => r.attemptsMade, 'attempts_made'), caseOfSome(finished, fid, (r) => (r.terminal ? now : null), 'finished_at')]
      : []),
    ...(waiting.length ? [caseOfSome(waiting, fid, (r) => r.notBefore, 'not_before')] : []),
    ...(results.length
      ? [
          caseOfSome(results, fid, (r) => r.result!.outcome, 'result_outcome'),
          caseOfSome(results, fid, (r) => r.result!.output, 'result_output'),
          caseOfSome(results, fid, (r) => r.result!.errorCode, 'result_error_code'),
          caseOfSome(results, fid, (r) => r.result!.errorMessage, 'result_error_message'),
        ]
      : []),
    ...(leased.length
      ? [
          {
            sql: `attempts_created = CASE id ${leased.map(() => 'WHEN ? THEN attempts_created + 1').join(' ')} ELSE attempts_created END`,
            args: leased.map(lid),
          },
        ]
      : []),
  ];
  // Finished tasks have no current attempt; a leased one has its new attempt.
  const current = leased.length
    ? { sql: `current_attempt_id = CASE id ${leased.map(() => 'WHEN ? THEN ?').join(' ')} ELSE NULL END`, args: leased.flatMap((l) => [l.taskId, l.attemptId]) }
    : { sql: 'current_attempt_id = NULL', args: [] };
  return [
    `UPDATE tasks SET ${[...cols, current].map((x) => x.sql).join(', ')}, updated_at = ?
      WHERE id IN (${placeholders(chunk.length)})`,
    [...[...cols, current].flatMap((x) => x.args), now, ...chunk.map(idOf)],
  ];
}

/** The statement for one finished task (the one-row case of closeOneAttemptSql, for the same
 * reason: each value once, no CASE): the columns the CASE form sets for that row. */
function updateOneTaskAfterResultSql(r: TaskAfterResult, now: string): [string, unknown[]] {
  const x = r.result;
  const rest = x ? ', result_outcome = ?, result_output = ?, result_error_code = ?, result_error_message = ?' : ', not_before = ?';
  return [
    `UPDATE tasks SET state = ?, attempts_made = ?, finished_at = ?${rest}, current_attempt_id = NULL, updated_at = ? WHERE id = ?`,
    [r.state, r.attemptsMade, r.terminal ? now : null, ...(x ? [x.outcome, x.output, x.errorCode, x.errorMessage] : [r.notBefore]), now, r.id],
  ];
}
