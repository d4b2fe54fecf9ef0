// Records which application every written row belongs to, per InnoDB transaction, so a test can
// prove docs/design.md "Coalesced transactions": every transaction touches the rows of exactly one application.
//
// How a row's transaction is identified: the audit table is system-versioned with *transaction
// precise* history (MariaDB >= 10.3: a BIGINT UNSIGNED `ROW START` column is filled by InnoDB with
// the id of the inserting transaction). Each trigger inserts one audit row in the same transaction
// as the row it records, so that column is exactly that transaction's id. The obvious alternative,
// `(SELECT trx_id FROM information_schema.innodb_trx WHERE trx_mysql_thread_id = CONNECTION_ID())`,
// is wrong inside a trigger: INNODB_TRX is a snapshot cache refreshed at most every 100 ms, and every
// read extends its life, so consecutive transactions of one connection report the *same* stale id
// (measured on 10.11: five transactions all reported the first one's id) and the test would merge
// unrelated transactions. Session-variable counters cannot see COMMIT, so they cannot split either.
//
// What is recorded: writes only (AFTER INSERT/UPDATE/DELETE on every application-scoped table).
// Locking reads of other applications' rows leave no trace here; the write set is what a sharded
// engine must route, so it is the property this proves. Rolled-back work (a savepoint of a failed
// item, a deadlocked attempt) disappears with its audit rows, which is right: it never committed.
//
// Why the triggers only copy columns (no lookup of namespaces in the trigger): a SELECT inside the
// trigger of an UPDATE runs as a locking read in REPEATABLE READ, which would add S locks the
// product does not take. The namespace → application resolution is done afterwards, in the report.
//
// The audit table has an AUTO_INCREMENT primary key and no other index: concurrent inserts from
// different applications only take insert-intention locks and never wait on each other.
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../../server/db/pool.js';

/** How a row of each application-scoped table names its application: `app` is an expression
 * giving the application id directly, `ns` one giving its namespace id (resolved through
 * namespaces.application_id); `key` identifies the row in failure reports. `R` is NEW or OLD. */
export const SCOPED_TABLES: Record<string, { app?: string; ns?: string; key: string; detail?: string }> = {
  applications: { app: 'R.id', key: 'R.id' },
  namespaces: { app: 'R.application_id', key: 'R.id' },
  queues: { ns: 'R.namespace_id', key: 'R.id' },
  credentials: { ns: 'R.namespace_id', key: 'R.id' },
  // Both columns are recorded: a task whose application_id disagrees with its namespace's
  // application would itself be a row of two applications, and the report counts both.
  // `detail` (the state written) tells in a failure report which code path wrote the row: an
  // attempt EXPIRED/LEASE_EXPIRED is the sweeper, RUNNING a start frame, SUCCEEDED a result frame.
  tasks: { app: 'R.application_id', ns: 'R.namespace_id', key: 'R.id', detail: 'R.state' },
  attempts: { app: 'R.application_id', ns: 'R.namespace_id', key: 'R.id', detail: "CONCAT(R.state, IFNULL(CONCAT('/', R.error_code), ''))" },
  // The claimable copy of a WAITING task (migration 000007), written with the task's state change.
  waiting_tasks: { app: 'R.application_id', ns: 'R.namespace_id', key: 'R.task_id' },
  resource_keys: { ns: 'R.namespace_id', key: 'HEX(LEFT(R.concurrency_key, 16))' },
  receipts: { ns: 'R.namespace_id', key: 'R.idempotency_key' },
  worker_identities: { ns: 'R.namespace_id', key: 'R.worker_id' },
  worker_sessions: { ns: 'R.namespace_id', key: 'R.id' },
  stream_heads: { ns: 'R.namespace_id', key: 'R.namespace_id' },
  result_events: { ns: 'R.namespace_id', key: 'R.sequence' },
  subscriptions: { ns: 'R.namespace_id', key: 'R.id' },
  deliveries: { ns: 'R.namespace_id', key: 'R.id' },
  schedules: { app: 'R.application_id', ns: 'R.namespace_id', key: 'R.id' },
  schedule_versions: { app: 'R.application_id', ns: 'R.namespace_id', key: 'CONCAT(R.schedule_id, "/", R.number)' },
  schedule_fires: { app: 'R.application_id', ns: 'R.namespace_id', key: 'CONCAT(R.schedule_id, "@", R.scheduled_for)', detail: 'R.outcome' },
  // Workflows (migration 000006): every row carries its application and namespace.
  workflows: { app: 'R.application_id', ns: 'R.namespace_id', key: 'R.id' },
  workflow_versions: { app: 'R.application_id', ns: 'R.namespace_id', key: 'CONCAT(R.workflow_id, "/", R.number)' },
  workflow_version_queues: { app: 'R.application_id', ns: 'R.namespace_id', key: 'CONCAT(R.workflow_id, "/", R.version, "/", R.queue_id)' },
  workflow_runs: { app: 'R.application_id', ns: 'R.namespace_id', key: 'R.id' },
  workflow_run_steps: { app: 'R.application_id', ns: 'R.namespace_id', key: 'CONCAT(R.run_id, "/", R.step_key)' },
  workflow_step_tasks: { app: 'R.application_id', ns: 'R.namespace_id', key: 'CONCAT(R.run_id, "/", R.step_key, "/", R.item_index)' },
  workflow_signals: { app: 'R.application_id', ns: 'R.namespace_id', key: 'CONCAT(R.run_id, "/", R.name)' },
  // Application-level admin actions (quota.set) have no namespace; their target is the application.
  audit_log: { app: "IF(R.namespace_id IS NULL AND R.target_type = 'application', R.target_id, NULL)", ns: 'R.namespace_id', key: 'R.id' },
};

/** Tables deliberately not audited, and why. Any other table of the schema fails the test until it
 * is classified here or in SCOPED_TABLES, so a new migration cannot slip past the property. */
export const OUT_OF_SCOPE: Record<string, string> = {
  schema_migrations: 'schema version bookkeeping of the whole database, written only by migrateUp before any tenant exists (lives in an unsharded keyspace)',
  schema_migrations_lock: "the migration runner's lease row (migration-lock.ts), one per database, written only by orbit-migrate",
  gateway_nodes: 'one row per running gateway process and the database node it writes through (writer-node.ts): infrastructure, no tenant data',
  app_audit: 'this recorder itself',
};

export const AUDIT_TABLE = 'app_audit';

/** Creates the audit table and the triggers (call on a fresh, migrated test database). */
export async function installAppAudit(pool: Pool): Promise<void> {
  await pool.query(`CREATE TABLE ${AUDIT_TABLE} (
    id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    table_name VARCHAR(64) CHARACTER SET ascii NOT NULL,
    op CHAR(1) CHARACTER SET ascii NOT NULL,
    row_key VARCHAR(255) NULL,
    detail VARCHAR(160) NULL,
    application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL,
    namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL,
    trx BIGINT UNSIGNED GENERATED ALWAYS AS ROW START INVISIBLE,
    trx_end BIGINT UNSIGNED GENERATED ALWAYS AS ROW END INVISIBLE,
    PERIOD FOR SYSTEM_TIME (trx, trx_end),
    PRIMARY KEY (id)
  ) ENGINE=InnoDB WITH SYSTEM VERSIONING`);
  for (const [table, how] of Object.entries(SCOPED_TABLES)) {
    for (const [event, row, op] of [
      ['INSERT', 'NEW', 'I'],
      ['UPDATE', 'NEW', 'U'],
      ['DELETE', 'OLD', 'D'],
    ] as const) {
      const expr = (e: string | undefined) => (e ? e.replaceAll('R.', `${row}.`) : 'NULL');
      await pool.query(
        `CREATE TRIGGER ${AUDIT_TABLE}_${table}_${op} AFTER ${event} ON ${table} FOR EACH ROW
           INSERT INTO ${AUDIT_TABLE} (table_name, op, row_key, detail, application_id, namespace_id)
           VALUES ('${table}', '${op}', ${expr(how.key)}, ${expr(how.detail)}, ${expr(how.app)}, ${expr(how.ns)})`,
      );
    }
  }
}

/** Base tables of the database that are neither audited nor listed as out of scope. */
export async function unclassifiedTables(pool: Pool): Promise<string[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type IN ('BASE TABLE', 'SYSTEM VERSIONED')`,
  );
  return rows.map((r) => r.t as string).filter((t) => !(t in SCOPED_TABLES) && !(t in OUT_OF_SCOPE));
}

export interface AuditRow {
  table: string;
  op: string;
  key: string | null;
  detail: string | null;
  /** Applications this row belongs to (two when its direct and namespace attributions disagree). */
  apps: string[];
}

export interface AuditTrx {
  trx: string;
  rows: AuditRow[];
  apps: Set<string>;
  /** Rows whose application could not be determined (counted as a failure by the test). */
  unattributed: AuditRow[];
}

/** Every committed transaction that wrote an audited row, with the applications of its rows. */
export async function auditByTransaction(pool: Pool): Promise<Map<string, AuditTrx>> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT CAST(a.trx AS CHAR) AS trx, a.table_name, a.op, a.row_key, a.detail, a.application_id, n.application_id AS ns_app, a.namespace_id
       FROM ${AUDIT_TABLE} a LEFT JOIN namespaces n ON n.id = a.namespace_id ORDER BY a.id`,
  );
  const out = new Map<string, AuditTrx>();
  for (const r of rows) {
    const trx = r.trx as string;
    let t = out.get(trx);
    if (!t) out.set(trx, (t = { trx, rows: [], apps: new Set(), unattributed: [] }));
    const apps = [...new Set([r.application_id as string | null, r.ns_app as string | null].filter((a): a is string => a !== null))];
    // A namespace id that resolves to nothing is as unknown as no attribution at all.
    const row: AuditRow = { table: r.table_name as string, op: r.op as string, key: r.row_key as string | null, detail: r.detail as string | null, apps };
    t.rows.push(row);
    if (apps.length === 0 || (r.namespace_id !== null && r.ns_app === null)) t.unattributed.push(row);
    for (const a of apps) t.apps.add(a);
  }
  return out;
}

/** Distinct row keys of `table` written by the transaction. */
export function distinctKeys(t: AuditTrx, table: string): number {
  return new Set(t.rows.filter((r) => r.table === table).map((r) => r.key)).size;
}

/** A short human description of an offending transaction: per application, the tables and counts. */
export function describeTrx(t: AuditTrx, names: Map<string, string>): string {
  const per = new Map<string, Map<string, number>>();
  for (const r of t.rows) {
    for (const a of r.apps.length ? r.apps : ['(unattributed)']) {
      const label = names.get(a) ?? a;
      const m = per.get(label) ?? new Map<string, number>();
      const k = `${r.table}.${r.op}${r.detail ? `[${r.detail}]` : ''}`;
      m.set(k, (m.get(k) ?? 0) + 1);
      per.set(label, m);
    }
  }
  const parts = [...per].map(([app, m]) => `${app}: ${[...m].map(([k, n]) => `${k}×${n}`).join(' ')}`);
  return `trx ${t.trx} (${t.rows.length} rows) → ${parts.join(' | ')}`;
}
