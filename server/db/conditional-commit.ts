// Checked assignments decide a transaction in its COMMIT's round trip: `column = IF(condition,
// value, NULL)` on a NOT NULL column makes strict sql_mode refuse the statement, so the text stops
// and the COMMIT never runs. The condition is per row; every named row exists (queues and
// applications are never deleted).
import { commitWithAll, queryAll, type Tx } from './pipeline.js';
import { errnoOf, MYSQL_ERRNO } from './errors.js';

/** Nothing else writes NULL into these, so errno 1048 on one of them is a check's refusal. */
const CHECKED_COLUMNS = {
  queues: ['active_attempts', 'revision'],
  applications: ['active_attempts', 'unfinished_tasks'],
} as const;

type CheckedTable = keyof typeof CHECKED_COLUMNS;

export function checkedAssignment<T extends CheckedTable>(_table: T, column: (typeof CHECKED_COLUMNS)[T][number], condition: string, value: string): string {
  return `${column} = IF(${condition}, ${value}, NULL)`;
}

const REFUSED_COLUMN = new RegExp(`^Column '(${[...new Set(Object.values(CHECKED_COLUMNS).flat())].join('|')})' cannot be null`);

export function isCheckRefusal(err: unknown): boolean {
  return errnoOf(err) === MYSQL_ERRNO.BAD_NULL && REFUSED_COLUMN.test((err as Error).message);
}

/** `column`: set when the caller must tell this update's refusal apart (NotApplied.refused). */
export interface CheckedUpdate {
  sql: string;
  values: (string | number)[];
  column?: string;
}

/** A check failed: nothing committed, the transaction still open. */
export class NotApplied extends Error {
  constructor(readonly column: string | undefined) {
    super('conditional update not applied');
  }

  refused(update: CheckedUpdate): boolean {
    return update.column !== undefined && update.column === this.column;
  }
}

/** A refusal of an undeclared column belongs to a queued write ahead, so it is rethrown. */
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

export function commitIfApplied(tx: Tx, updates: CheckedUpdate[]): Promise<void> {
  return decided(commitWithAll(tx, statementsOf(updates)), updates);
}

/** NotApplied leaves the transaction open. */
export function applyChecked(tx: Tx, updates: CheckedUpdate[]): Promise<void> {
  return decided(queryAll(tx, statementsOf(updates)), updates);
}
