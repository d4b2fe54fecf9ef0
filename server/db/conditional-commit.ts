// The conditional updates that decide a transaction — the hot rows of a submit (queue touch,
// unfinished-task quota) and of a claim (queue and application permits) — sent with its COMMIT
// in one round trip. Each update is followed, inside one compound statement (MariaDB's `BEGIN NOT
// ATOMIC … END`, run by the server as one statement), by a check of its matched rows that raises
// a SIGNAL when they differ from what it must match: the multi-statement text stops there, the
// COMMIT after it never runs, and transactionOn rolls the transaction back. Before, each update
// was a round trip of its own and the COMMIT another, and the hot rows stayed locked across all
// of them: on the paced path (issue 19) every submit and claim of the application queued on those
// rows, each waiting out the other's round trips (docs/benchmarks.md, "Where the paced p99 goes").
import type { Tx } from './pipeline.js';
import { commitWithAll } from './pipeline.js';

/** One conditional update: `sql` with `values`, applied when it matched exactly `rows` rows
 * (mysql2 connects with CLIENT_FOUND_ROWS, so ROW_COUNT() counts matched rows). `tag` names it
 * in the refusal ([a-z-] only: it goes into the statement text). */
export interface ConditionalUpdate {
  sql: string;
  values: (string | number)[];
  rows: number;
  tag: string;
}

/** The first update of a commitIfApplied that did not match its rows: nothing was committed and the
 * transaction is still open (the caller's transactionOn rolls it back). */
export class NotApplied extends Error {
  constructor(readonly tag: string) {
    super(`conditional update not applied: ${tag}`);
  }
}

const MARK = 'orbit-not-applied:';
/** ER_SIGNAL_EXCEPTION: SQLSTATE '45000' raised by SIGNAL. */
const SIGNAL_ERRNO = 1644;

/** commitIfApplied(tx, updates): the updates in order, then COMMIT, in one round trip (with the
 * transaction's queued writes before them). Throws NotApplied (nothing committed) when one did
 * not match its rows; other errors (a deadlock, a lost connection) as the statements raise them. */
export async function commitIfApplied(tx: Tx, updates: ConditionalUpdate[]): Promise<void> {
  for (const u of updates) if (!/^[a-z-]+$/.test(u.tag) || !Number.isInteger(u.rows)) throw new Error(`bad conditional update ${u.tag}`);
  const body = updates
    .map((u) => `${u.sql}; IF ROW_COUNT() <> ${u.rows} THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '${MARK}${u.tag}'; END IF;`)
    .join('\n');
  try {
    await commitWithAll(tx, [[`BEGIN NOT ATOMIC\n${body}\nEND`, updates.flatMap((u) => u.values)]]);
  } catch (err) {
    const e = err as { errno?: number; sqlMessage?: string };
    if (e.errno === SIGNAL_ERRNO && e.sqlMessage?.startsWith(MARK)) throw new NotApplied(e.sqlMessage.slice(MARK.length));
    throw err;
  }
}
