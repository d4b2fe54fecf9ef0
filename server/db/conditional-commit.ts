// The conditional updates that decide a transaction — the hot rows of a submit (queue touch,
// unfinished-task quota) and of a claim (queue and application permits) — sent with its COMMIT
// in one round trip. Each update is followed by a check of its matched rows that fails when they
// differ from what it must match: `SELECT (SELECT 1 UNION ALL SELECT 1 FROM DUAL WHERE ROW_COUNT()
// <> n)` — a scalar subquery that returns two rows, error 1242, exactly when the update before it
// matched other than n rows (as `DO` MariaDB 10.11 does not evaluate it: no error). Plain statements, so it runs on MySQL 8 as on MariaDB (a compound
// `BEGIN NOT ATOMIC … IF … SIGNAL` would be MariaDB's only). The multi-statement text stops at the
// failing check, the COMMIT after it never runs, and transactionOn rolls the transaction back. Before, each update
// was a round trip of its own and the COMMIT another, and the hot rows stayed locked across all
// of them: on the paced path (issue 19) every submit and claim of the application queued on those
// rows, each waiting out the other's round trips (docs/benchmarks.md, "Where the paced p99 goes").
import type { Tx } from './pipeline.js';
import { commitWithAll } from './pipeline.js';

/** One conditional update: `sql` with `values`, applied when it matched exactly `rows` rows
 * (mysql2 connects with CLIENT_FOUND_ROWS, so ROW_COUNT() counts matched rows). */
export interface ConditionalUpdate {
  sql: string;
  values: (string | number)[];
  rows: number;
}

/** The first update of a commitIfApplied that did not match its rows: nothing was committed and the
 * transaction is still open (the caller's transactionOn rolls it back). */
export class NotApplied extends Error {
  constructor() {
    super('conditional update not applied');
  }
}

/** ER_SUBQUERY_NO_1_ROW: the check's subquery returned its second row. */
const CHECK_ERRNO = 1242;

/** commitIfApplied(tx, updates): the updates in order, then COMMIT, in one round trip (with the
 * transaction's queued writes before them). Throws NotApplied (nothing committed) when one did
 * not match its rows; other errors (a deadlock, a lost connection) as the statements raise them. */
export async function commitIfApplied(tx: Tx, updates: ConditionalUpdate[]): Promise<void> {
  const texts: [string, (string | number)[]][] = [];
  for (const u of updates) {
    if (!Number.isInteger(u.rows) || u.rows < 0) throw new Error(`bad conditional update: rows ${u.rows}`);
    texts.push([u.sql, u.values], [`SELECT (SELECT 1 UNION ALL SELECT 1 FROM DUAL WHERE ROW_COUNT() <> ${u.rows})`, []]);
  }
  try {
    await commitWithAll(tx, texts);
  } catch (err) {
    if ((err as { errno?: number }).errno === CHECK_ERRNO) throw new NotApplied();
    throw err;
  }
}
