// Orbit's one way to make a transaction's conditional counter updates decide it in the round trip
// of its COMMIT: a checked assignment, `column = IF(condition, new value, NULL)`, on a NOT NULL
// column. Where the condition fails the statement writes NULL, which the column refuses under
// Orbit's strict sql_mode (db/session-setup.ts: errno 1048, statement undone), so a
// multi-statement text stops at that statement — the COMMIT after it never runs and transactionOn
// rolls the whole transaction back. Used by every task creation (the queue touch, the
// unfinished-task quota: a submit batch, an item alone, and without the COMMIT inside a schedule's
// or a workflow's own transaction, applyChecked), a claim round (queue and application permits) and
// a result transaction's hand-off and refill permits (db/ledger-sql.ts). The check is inside the UPDATE, not a statement of its own:
// the mariadbd profile of issue 19 has per-statement work (parse ~17 %, optimize ~20 % of its
// CPU) dominating the database (docs/benchmarks.md, "Where mariadbd's CPU goes"); a separate
// `SELECT … WHERE ROW_COUNT() <> n` after each update cost one statement more per update.
// Plain statements, so it runs on MySQL 8 as on MariaDB.
//
// A checked assignment updates every row its WHERE names, the condition decided per row: a row
// that fails its condition fails the statement. A row that does not exist is not checked — every
// caller names queues and applications that exist (read in the same transaction, or a published
// workflow version's queues), and neither is ever deleted, so none can be missing.
import type { Tx } from './pipeline.js';
import { commitWithAll, queryAll } from './pipeline.js';
import { errnoOf, MYSQL_ERRNO } from './errors.js';

/** The NOT NULL columns a check may set to NULL, by table. No other statement of Orbit writes NULL
 * into them, so errno 1048 on one of them is a check's refusal and nothing else. The message names
 * the column only, not the table: a column name here must mean a check wherever it appears. */
const CHECKED_COLUMNS = {
  queues: ['active_attempts', 'revision'],
  applications: ['active_attempts', 'unfinished_tasks'],
} as const;

type CheckedTable = keyof typeof CHECKED_COLUMNS;

/** checkedAssignment(table, column, condition, value): `column = IF(condition, value, NULL)` for
 * an UPDATE's SET — the column keeps `value` where `condition` holds, and the statement is refused
 * (isCheckRefusal) where it does not. */
export function checkedAssignment<T extends CheckedTable>(_table: T, column: (typeof CHECKED_COLUMNS)[T][number], condition: string, value: string): string {
  return `${column} = IF(${condition}, ${value}, NULL)`;
}

const REFUSED_COLUMN = new RegExp(`^Column '(${[...new Set(Object.values(CHECKED_COLUMNS).flat())].join('|')})' cannot be null`);

/** True for a checked assignment's refusal: errno 1048 on one of the checked columns (never any
 * other 1048: a NULL into another column is a bug and comes back as itself). */
export function isCheckRefusal(err: unknown): boolean {
  return errnoOf(err) === MYSQL_ERRNO.BAD_NULL && REFUSED_COLUMN.test((err as Error).message);
}

/** An UPDATE whose SET holds checked assignments, with its values. `column`: the checked column,
 * for an update whose refusal the caller tells apart from the others' (NotApplied.refused). */
export interface CheckedUpdate {
  sql: string;
  values: (string | number)[];
  column?: string;
}

/** A check failed: nothing was committed and the transaction is still open (the caller's
 * transactionOn rolls it back, or the caller rolls back to its savepoint). `column` is the
 * refused check's column, from the server's message: it names which update failed when the
 * updates of one text check different columns (a submit's queues.revision and
 * applications.unfinished_tasks), so the refusal needs no read to say which condition failed. */
export class NotApplied extends Error {
  constructor(readonly column: string | undefined) {
    super('conditional update not applied');
  }

  /** True when `update`'s own check (its column) was the one refused. */
  refused(update: CheckedUpdate): boolean {
    return update.column !== undefined && update.column === this.column;
  }
}

/** The outcome of a text of checked updates: a check's refusal as NotApplied, anything else as is.
 * When the updates declare their columns, a refusal of another column is not theirs (a queued
 * write's own check, e.g. a ledger's hand-off permits ahead of them in the text) and comes back as
 * itself, for that write's owner to recognize (isCheckRefusal). */
async function decided(sent: Promise<unknown>, updates: CheckedUpdate[]): Promise<void> {
  try {
    await sent;
  } catch (err) {
    if (!isCheckRefusal(err)) throw err;
    const column = REFUSED_COLUMN.exec((err as Error).message)?.[1];
    const declared = updates.filter((u) => u.column !== undefined);
    if (declared.length > 0 && !declared.some((u) => u.column === column)) throw err;
    throw new NotApplied(column);
  }
}

const statementsOf = (updates: CheckedUpdate[]): [string, unknown[]][] => updates.map((u) => [u.sql, u.values]);

/** commitIfApplied(tx, updates): the updates in order, then COMMIT, in one round trip (with the
 * transaction's queued writes before them). Throws NotApplied (nothing committed, the updates
 * after the refused one never ran) when a check failed; other errors (a deadlock, a lost
 * connection) as the statements raise them. */
export function commitIfApplied(tx: Tx, updates: CheckedUpdate[]): Promise<void> {
  return decided(commitWithAll(tx, statementsOf(updates)), updates);
}

/** applyChecked(tx, updates): the same updates in a transaction that goes on after them (a
 * caller's own, which commits later), in one round trip with the queued writes; NotApplied when a
 * check failed (the refused update undone by the server, the ones after it never ran, the
 * transaction still open). */
export function applyChecked(tx: Tx, updates: CheckedUpdate[]): Promise<void> {
  return decided(queryAll(tx, statementsOf(updates)), updates);
}
