// Counters read only before and after a measurement (never polled during one): the database's
// global status, InnoDB transaction metrics and the gateway's /metrics (CPU times: bench/cpu.ts).
import type { RowDataPacket } from 'mysql2/promise';
import type mysql from 'mysql2/promise';

/** Server option that turns on the InnoDB transaction counters read here (INNODB_METRICS). */
export const INNODB_MONITOR_ARG = '--innodb-monitor-enable=trx_%';

/** Server option that turns on the per-table row counters read here
 * (information_schema.TABLE_STATISTICS: rows changed, and rows changed × the table's indexes). */
export const USERSTAT_ARG = '--userstat=1';

/** The row operations read from SHOW GLOBAL STATUS: the handler calls (every row an INSERT,
 * UPDATE or DELETE wrote, of any engine). (InnoDB's own Innodb_rows_* do not exist in MariaDB
 * 10.11, whose INNODB_METRICS dml_* are off by default: the handler counts are the same rows.) */
const ROW_STATUS = ['Handler_write', 'Handler_update', 'Handler_delete'];

/** Rows the handler read (in the JSON's status_delta only): by scanning (`Handler_read_rnd_next`,
 * full scans and temporary tables) and by key (`_key`, `_next`) — against the rows changed, the
 * measure of statements that examine more than they touch (a full scan of waiting_tasks per
 * hand-off was found this way: docs/benchmarks.md, "Where mariadbd's CPU goes"). */
const READ_STATUS = ['Handler_read_rnd_next', 'Handler_read_key', 'Handler_read_next', 'Handler_read_rnd', 'Handler_tmp_write'];

const TRX_METRICS = ['trx_rw_commits', 'trx_ro_commits', 'trx_commits_insert_update', 'trx_rollbacks'];

export type DbStatus = Map<string, number>;

/** SHOW GLOBAL STATUS (Questions, Queries, Com_*, Innodb_row_lock_*, the row operations) plus
 * INNODB_METRICS trx_* and the per-table rows of TABLE_STATISTICS (as `rows:<table>` and
 * `rows_x_indexes:<table>`; empty without --userstat): three statements, so a before/after pair
 * adds a constant that `dbCalibrate` measures. */
export async function dbStatus(q: mysql.Pool | mysql.Connection): Promise<DbStatus> {
  const [rows] = await q.query<RowDataPacket[]>(
    "SHOW GLOBAL STATUS WHERE Variable_name LIKE 'Com\\_%' OR Variable_name IN ('Questions','Queries','Innodb_row_lock_waits','Innodb_row_lock_time',?)",
    [[...ROW_STATUS, ...READ_STATUS]],
  );
  const m: DbStatus = new Map(rows.map((r) => [r.Variable_name as string, Number(r.Value)]));
  const [trx] = await q.query<RowDataPacket[]>('SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE NAME IN (?)', [TRX_METRICS]);
  for (const r of trx) m.set(r.NAME as string, Number(r.COUNT));
  const [tables] = await q.query<RowDataPacket[]>(
    'SELECT TABLE_NAME, ROWS_CHANGED, ROWS_CHANGED_X_INDEXES FROM information_schema.TABLE_STATISTICS WHERE TABLE_SCHEMA = DATABASE()',
  );
  for (const r of tables) {
    m.set(`rows:${r.TABLE_NAME as string}`, Number(r.ROWS_CHANGED));
    m.set(`rows_x_indexes:${r.TABLE_NAME as string}`, Number(r.ROWS_CHANGED_X_INDEXES));
  }
  return m;
}

export function dbDelta(before: DbStatus, after: DbStatus, overhead?: DbStatus): DbStatus {
  const d: DbStatus = new Map();
  for (const [k, v] of after) d.set(k, v - (before.get(k) ?? 0) - (overhead?.get(k) ?? 0));
  return d;
}

/** The bench's own statements in a before/after pair, measured on a quiet server. */
export async function dbCalibrate(q: mysql.Pool | mysql.Connection): Promise<DbStatus> {
  const a = await dbStatus(q);
  const b = await dbStatus(q);
  return dbDelta(a, b);
}

export interface DbPerUnit {
  /** Statements sent by clients (`Questions`: every statement of a multi-statement query counts,
   * statements run inside stored programs do not). */
  statements: number;
  /** `Queries − Questions − Com_stmt_prepare`: statements run inside stored programs. */
  storedProgramStatements: number;
  /** mysql2 `execute` round trips (`Com_stmt_execute`, included in statements) and prepares. */
  preparedExecutes: number;
  prepares: number;
  breakdown: Record<string, number>;
  /** explicit COMMITs + autocommit writes (a plain autocommit SELECT is not a commit). */
  commits: number;
  /** `Com_commit`: explicit COMMIT statements. */
  explicitCommits: number;
  /** InnoDB transactions committed (INNODB_METRICS `trx_rw_commits + trx_ro_commits −
   * trx_rollbacks`: explicit transactions that read or wrote InnoDB rows, autocommit writes and
   * locking reads; InnoDB counts a rollback as a transaction end too). */
  innodbCommits: number;
  /** max(0, innodbCommits − explicitCommits): the autocommit writes (a lower bound: a COMMIT of a
   * transaction that touched no InnoDB row counts in Com_commit but not in InnoDB's counters). */
  autocommitWrites: number;
  /** `trx_commits_insert_update`: transactions that changed rows (each commit of one needs a
   * durable redo write); rolled-back ones with changes count too (see `rollbacks`). */
  writeCommits: number;
  rollbacks: number;
  rowLockWaits: number;
  rowLockWaitMs: number;
  /** Rows written by INSERT (`Handler_write`), UPDATE (`Handler_update`: rows actually changed)
   * and DELETE (`Handler_delete`). */
  rowOps: { write: number; update: number; delete: number };
  /** Per table of Orbit's schema: rows inserted, updated or deleted (TABLE_STATISTICS
   * ROWS_CHANGED), and the same × the table's indexes (ROWS_CHANGED_X_INDEXES: an upper bound of
   * the index entries written — an UPDATE counts every index, changed or not). */
  tableRows: Record<string, { rows: number; rowsXIndexes: number }>;
  /** Every counter that moved (totals, not per unit). */
  raw: Record<string, number>;
}

const BREAKDOWN: Record<string, string[]> = {
  select: ['Com_select'],
  insert: ['Com_insert', 'Com_insert_select', 'Com_replace', 'Com_replace_select'],
  update: ['Com_update', 'Com_update_multi'],
  delete: ['Com_delete', 'Com_delete_multi'],
  begin: ['Com_begin'],
  commit: ['Com_commit'],
  rollback: ['Com_rollback', 'Com_rollback_to_savepoint'],
  savepoint: ['Com_savepoint', 'Com_release_savepoint'],
  call: ['Com_call_procedure'],
  set: ['Com_set_option'],
};

/** Per-unit figures from a status delta (unit = task, or row for the baseline). */
export function dbPerUnit(d: DbStatus, units: number): DbPerUnit {
  const g = (k: string) => d.get(k) ?? 0;
  const per = (n: number) => n / units;
  const breakdown: Record<string, number> = {};
  let listed = 0;
  for (const [name, keys] of Object.entries(BREAKDOWN)) {
    const n = keys.reduce((s, k) => s + g(k), 0);
    breakdown[name] = per(n);
    listed += n;
  }
  // Com_* counts statements inside stored programs too; Questions does not.
  breakdown.other = per(Math.max(0, g('Questions') - Math.min(listed, g('Questions'))));
  // InnoDB's trx_rw/ro_commits count every transaction end, rollbacks included.
  const innodb = Math.max(0, g('trx_rw_commits') + g('trx_ro_commits') - g('trx_rollbacks'));
  const autocommit = Math.max(0, innodb - g('Com_commit'));
  return {
    statements: per(g('Questions')),
    storedProgramStatements: per(Math.max(0, g('Queries') - g('Questions') - g('Com_stmt_prepare'))),
    preparedExecutes: per(g('Com_stmt_execute')),
    prepares: per(g('Com_stmt_prepare')),
    breakdown,
    commits: per(g('Com_commit') + autocommit),
    explicitCommits: per(g('Com_commit')),
    innodbCommits: per(innodb),
    autocommitWrites: per(autocommit),
    writeCommits: per(g('trx_commits_insert_update')),
    rollbacks: per(g('Com_rollback')),
    rowLockWaits: per(g('Innodb_row_lock_waits')),
    rowLockWaitMs: per(g('Innodb_row_lock_time')),
    rowOps: {
      write: per(g('Handler_write')),
      update: per(g('Handler_update')),
      delete: per(g('Handler_delete')),
    },
    tableRows: Object.fromEntries(
      [...d]
        .filter(([k, v]) => k.startsWith('rows:') && v > 0)
        .map(([k, v]) => [k.slice(5), { rows: per(v), rowsXIndexes: per(g(`rows_x_indexes:${k.slice(5)}`)) }]),
    ),
    raw: Object.fromEntries([...d].filter(([, v]) => v !== 0)),
  };
}

/** One scrape of the gateway's Prometheus text: `name{labels}` → value. */
export type Scrape = Map<string, number>;

export async function scrapeMetrics(url: string): Promise<Scrape> {
  const res = await fetch(url + '/metrics');
  const text = await res.text();
  const m: Scrape = new Map();
  for (const line of text.split('\n')) {
    const x = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (x) m.set(x[1]! + (x[2] ?? ''), Number(x[3]));
  }
  return m;
}

/** Sum of a metric over its label sets whose labels contain `labels` (e.g. 'result="empty"');
 * null when the metric does not exist. */
export function metricSum(s: Scrape, name: string, labels = ''): number | null {
  let found = false;
  let sum = 0;
  for (const [k, v] of s) {
    const brace = k.indexOf('{');
    if ((brace < 0 ? k : k.slice(0, brace)) !== name) continue;
    if (labels && !k.includes(labels)) continue;
    found = true;
    sum += v;
  }
  return found ? sum : null;
}

export function metricDelta(before: Scrape, after: Scrape, name: string, labels = ''): number | null {
  const a = metricSum(after, name, labels);
  if (a === null) return null;
  return a - (metricSum(before, name, labels) ?? 0);
}
