// The benchmark report: one JSON object (`--json`) or human-readable tables.
import type { BaselineResult } from './baseline.js';
import { uPerTask } from './cpu.js';
import { drainPeerJson, drainText } from './drain.js';
import type { PeerOutcome } from './graphile-peer.js';
import type { IdleResult } from './idle-sessions.js';
import type { ScheduledLoadResult } from './scheduled-load.js';
import { renewFloodJson, renewFloodText, type RenewFloodResult } from './renew-flood.js';
import type { ScenarioResult, ScenarioSpec } from './scenario.js';
import { fmt, round } from './stats.js';
import { workflowLoadJson, workflowLoadText, type WorkflowLoadResult } from './workflow-load.js';

export interface Skipped {
  spec: ScenarioSpec;
  reason: string;
}

export interface ReportInput {
  machine: Record<string, unknown>;
  mode: 'quick' | 'full';
  command: string;
  baselineHow: string;
  /** Share of each scenario's tasks run as its warm-up (0: measured cold; absent in reports made
   * before the warm-up, which were all cold). */
  warmupFraction?: number;
  autocommit: BaselineResult;
  transaction: BaselineResult;
  scenarios: (ScenarioResult | Skipped)[];
  idle: IdleResult;
  batchSize: number;
  scheduled: ScheduledLoadResult | null;
  renewFlood: RenewFloodResult | null;
  /** Workflow scenarios (absent in reports made before workflows). */
  workflows?: WorkflowLoadResult[];
  /** graphile-worker's drain next to Orbit's (null: not run), and the load average at the end. */
  drainPeer?: PeerOutcome | null;
  loadavg?: number[];
}

const isSkipped = (r: ScenarioResult | Skipped): r is Skipped => 'reason' in r;

function label(spec: ScenarioSpec): string {
  return spec.rate ? `${spec.name} (${fmt(spec.rate)}/s)` : spec.name;
}

/** `unitUs`: MariaDB CPU per baseline autocommit INSERT (µs), the unit u. */
function scenarioJson(r: ScenarioResult | Skipped, base: number, unitUs: number, batchSize: number) {
  const spec = r.spec;
  const head = {
    name: spec.name,
    submit: spec.submit,
    batch_size: spec.submit === 'batch' ? batchSize : 1,
    keys: spec.keys,
    paced_per_s: spec.rate ?? null,
    preloaded: spec.preload ?? false,
    drain: spec.drain ?? false,
    workers: spec.workers ?? null,
    capacity: spec.capacity ?? null,
    prefetch: spec.prefetch ?? null,
  };
  if (isSkipped(r)) return { ...head, skipped: r.reason, tasks: 0, tasks_per_s: null, cpu_u_per_task: null, ratio: null };
  const d = r.db;
  const breakdown = Object.fromEntries(Object.entries(d.breakdown).map(([k, v]) => [k, round(v)]));
  const cpu = Object.fromEntries(Object.entries(r.cpuMsPerTask).map(([k, v]) => [k, round(v)]));
  const u = uPerTask(r.cpuMsPerTask, unitUs);
  return {
    ...head,
    warmup_tasks: r.warmupTasks,
    warmup_seconds: round(r.warmupSeconds),
    tasks: r.tasks,
    seconds: round(r.seconds),
    tasks_per_s: round(r.tasksPerSec, 1),
    cpu_u_per_task: round(u.total, 2),
    db_u: round(u.db, 2),
    gateway_u: round(u.gateway, 2),
    workers_u: round(u.workers, 2),
    producers_u: round(u.producers, 2),
    ratio: round(r.tasksPerSec / base, 4),
    statements_per_task: round(d.statements),
    statements_breakdown_per_task: breakdown,
    stored_program_statements_per_task: round(d.storedProgramStatements),
    prepared_executes_per_task: round(d.preparedExecutes),
    commits_per_task: round(d.commits),
    explicit_commits_per_task: round(d.explicitCommits),
    innodb_commits_per_task: round(d.innodbCommits),
    autocommit_writes_per_task: round(d.autocommitWrites),
    write_commits_per_task: round(d.writeCommits),
    rollbacks_per_task: round(d.rollbacks),
    row_lock_waits_per_task: round(d.rowLockWaits),
    row_lock_wait_ms_per_task: round(d.rowLockWaitMs),
    row_ops_per_task: Object.fromEntries(Object.entries(d.rowOps).map(([k, v]) => [k, round(v)])),
    rows_changed_per_task: round(Object.values(d.tableRows).reduce((s, t) => s + t.rows, 0)),
    rows_changed_x_indexes_per_task: round(Object.values(d.tableRows).reduce((s, t) => s + t.rowsXIndexes, 0)),
    table_rows_per_task: Object.fromEntries(
      Object.entries(d.tableRows).map(([k, t]) => [k, { rows_changed: round(t.rows), rows_changed_x_indexes: round(t.rowsXIndexes) }]),
    ),
    claim_rounds_per_task: round(r.claimRoundsPerTask),
    gateway_transactions_per_task: round(r.gatewayTransactionsPerTask),
    round_trips_per_task: round(r.roundTripsPerTask),
    claim_rounds_source: r.claimRoundsSource,
    empty_claim_share: round(r.emptyClaimShare),
    frame_batch_mean: round(r.frameBatchMean, 2),
    gateway_finished: r.gatewayFinished,
    worker_frames_per_task: round(r.workerFramesPerTask),
    worker_socket_writes_per_task: round(r.workerWritesPerTask),
    cpu_ms_per_task: cpu,
    submit_to_assign_ms: { p50: round(r.submitToAssignMs.p50, 1), p99: round(r.submitToAssignMs.p99, 1) },
    result_to_ok_ms: { p50: round(r.resultToOkMs.p50, 1), p99: round(r.resultToOkMs.p99, 1) },
    latency_samples: { submit_to_assign: r.latencySamples.submitToAssign, result_to_ok: r.latencySamples.resultToOk },
    http_response_ms: { p50: round(r.httpResponseMs.p50, 1), p99: round(r.httpResponseMs.p99, 1) },
    submit_transactions_per_task: round(r.submitTransactionsPerTask),
    key_handoff_ms: round(r.keyHandoffMs, 1),
    status_delta: d.raw,
  };
}

function baselineJson(b: BaselineResult) {
  return {
    per_s: round(b.medianPerSec, 1),
    best_per_s: round(b.bestPerSec, 1),
    rounds_per_s: b.roundsPerSec.map((x) => round(x, 1)),
    rows: b.rows,
    connections: b.connections,
    statements_per_row: round(b.statementsPerRow),
    commits_per_row: round(b.commitsPerRow),
    cpu_us_per_row: round(b.cpuUsPerRow, 1),
    rounds_cpu_us_per_row: b.roundsCpuUsPerRow.map((x) => round(x, 1)),
  };
}

/** How the scenarios were measured: warm (after a drained warm-up in the same processes) or cold. */
function warmupJson(fraction: number) {
  return {
    measured: fraction > 0 ? ('warm' as const) : ('cold' as const),
    fraction: round(fraction, 4),
    how:
      fraction > 0
        ? `before each scenario's window, ${round(fraction * 100, 1)} % of its task count submitted, claimed and completed the same way by the same gateway, worker and producer processes and drained (no WAITING/LEASED/RUNNING task left); per scenario warmup_tasks; no figure counts them (counters, CPU and latencies from the window's opening)`
        : "cold (--no-warmup): each scenario measured from its worker and producer processes' start, the gateway as the previous scenarios left it",
  };
}

function warmupText(fraction: number): string {
  return fraction > 0
    ? `Scenarios measured warm: each after a drained warm-up of ${fmt(fraction * 100)} % of its task count in the same processes (tasks: counted + warm-up; no figure counts the warm-up).`
    : 'Scenarios measured cold (--no-warmup): from the start of their worker and producer processes.';
}

export function reportJson(x: ReportInput) {
  const base = x.autocommit.medianPerSec;
  return {
    machine: x.machine,
    mode: x.mode,
    command: x.command,
    baseline_autocommit_per_s: round(base, 1),
    baseline_transaction_per_s: round(x.transaction.medianPerSec, 1),
    baseline_insert_cpu_us: round(x.autocommit.cpuUsPerRow, 1),
    baseline_reported: x.baselineHow,
    warmup: warmupJson(x.warmupFraction ?? 0),
    baseline: { autocommit: baselineJson(x.autocommit), transaction: baselineJson(x.transaction) },
    scenarios: x.scenarios.map((r) => scenarioJson(r, base, x.autocommit.cpuUsPerRow, x.batchSize)),
    scheduled_load: x.scheduled
      ? {
          schedules: x.scheduled.schedules,
          seconds: x.scheduled.seconds,
          fires: x.scheduled.fires,
          fires_per_s: round(x.scheduled.firesPerSec, 1),
          fire_lag_ms: { p50: round(x.scheduled.lagP50Ms, 1), p99: round(x.scheduled.lagP99Ms, 1), max: round(x.scheduled.lagMaxMs, 1) },
          outcomes: x.scheduled.outcomes,
          ordinary_tasks_per_s: round(x.scheduled.ordinaryTasksPerSec, 1),
        }
      : null,
    renew_flood: x.renewFlood ? renewFloodJson(x.renewFlood) : null,
    drain_peer: drainPeerJson(x.drainPeer ?? null),
    workflow_scenarios: (x.workflows ?? []).map((r) => workflowLoadJson(r, x.autocommit.cpuUsPerRow)),
    idle_sessions: {
      sessions: x.idle.sessions,
      rss_before_mb: round(x.idle.rssBeforeMb, 1),
      rss_after_mb: round(x.idle.rssAfterMb, 1),
      mb_per_1000: round(x.idle.mbPer1000, 2),
      heap_before_mb: round(x.idle.heapBeforeMb, 1),
      heap_after_mb: round(x.idle.heapAfterMb, 1),
      heap_mb_per_1000: round(x.idle.heapMbPer1000, 2),
      measured: 'after the scenarios; both readings follow forced full GCs in the gateway; heap = JS heap in use + external memory',
    },
    counting: {
      ratio: 'tasks_per_s / baseline_autocommit_per_s',
      u: 'baseline_insert_cpu_us = median over the autocommit rounds of mariadbd CPU (process tree utime+stime) / rows inserted; cpu_u_per_task = cpu_ms_per_task.total * 1000 / baseline_insert_cpu_us, split into db_u, gateway_u, workers_u, producers_u',
      statements:
        'SHOW GLOBAL STATUS Questions delta (client statements; each statement of a multi-statement query counts, statements inside stored programs are in stored_program_statements = Queries - Questions - Com_stmt_prepare); breakdown from Com_* (which also count statements inside stored programs); the bench subtracts its own status reads',
      commits:
        'explicit COMMITs (Com_commit) + autocommit writes, where autocommit writes = max(0, InnoDB commits - Com_commit) and InnoDB commits = INNODB_METRICS trx_rw_commits + trx_ro_commits - trx_rollbacks (every committed transaction that read or wrote InnoDB rows, explicit or autocommit, except plain autocommit SELECTs); write_commits = trx_commits_insert_update (transactions that changed rows: each commit of one needs a durable redo write; rolled-back ones with changes count too)',
      row_lock_waits: 'Innodb_row_lock_waits delta (row_lock_wait_ms: Innodb_row_lock_time delta)',
      row_ops: 'SHOW GLOBAL STATUS deltas: write = Handler_write (rows inserted), update = Handler_update (rows an UPDATE changed), delete = Handler_delete',
      table_rows:
        'information_schema.TABLE_STATISTICS deltas of the orbit schema (server started with --userstat=1): rows_changed = rows inserted, updated or deleted in the table; rows_changed_x_indexes = rows_changed x the table\'s indexes (primary key included), an upper bound of the index entries written (an UPDATE that changes no indexed column writes the clustered record only; docs/design.md "Index entries per task" counts them exactly)',
      claim_rounds: 'gateway /metrics delta (claim_rounds_source); empty share from orbit_claim_rounds_total{result="empty"}, null when the gateway lacks it',
      cpu_ms:
        '/proc/<pid>/stat utime+stime+cutime+cstime of each process tree (the process and every live descendant), all read at one moment when the window opens (after the warm-up is drained, before the producers start the counted tasks) and one after the last result (workers started after a preload: from their connection; a drain: every process from the first worker connection, each worker from its own, the submits before it): mariadbd, gateway, worker processes (sum), producer processes (sum)',
    },
  };
}

export function reportText(x: ReportInput): string {
  const base = x.autocommit.medianPerSec;
  const unit = x.autocommit.cpuUsPerRow;
  const b = (r: BaselineResult, what: string) =>
    `  ${what.padEnd(34)} ${fmt(r.medianPerSec).padStart(7)} commits/s  (rounds ${r.roundsPerSec.map((v) => fmt(v)).join(' / ')}; best ${fmt(r.bestPerSec)}; ` +
    `${fmt(r.statementsPerRow, 2)} statements and ${fmt(r.commitsPerRow, 2)} commits per row)`;
  const done = x.scenarios.filter((r): r is ScenarioResult => !isSkipped(r));
  const lines = [
    `baseline (${x.baselineHow}; ${x.autocommit.connections} connections, innodb_flush_log_at_trx_commit=1):`,
    b(x.autocommit, 'autocommit INSERT (headline):'),
    b(x.transaction, 'START TRANSACTION; INSERT; COMMIT:'),
    `  u = MariaDB CPU per autocommit INSERT:  ${fmt(unit, 1)} µs  (rounds ${x.autocommit.roundsCpuUsPerRow.map((v) => fmt(v, 1)).join(' / ')}; ` +
      `the transaction form: ${fmt(x.transaction.cpuUsPerRow, 1)} µs per row)`,
    '',
    warmupText(x.warmupFraction ?? 0),
    '',
    '| scenario | submit | tasks | tasks/s | CPU u per task | u: db / gateway / workers / producers | × autocommit baseline | submit→assign p50 / p99 ms | result→ok p50 / p99 ms | key release→next grant ms |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...x.scenarios.map((r) => {
      const sub = r.spec.submit === 'batch' ? `batch of ${x.batchSize}` : 'single';
      if (isSkipped(r)) return `| ${label(r.spec)} | ${sub} | skipped: ${r.reason} | | | | | | | |`;
      const u = uPerTask(r.cpuMsPerTask, unit);
      return (
        `| ${label(r.spec)} | ${sub} | ${fmt(r.tasks)}${r.warmupTasks ? ` + ${fmt(r.warmupTasks)}` : ''} | ${fmt(r.tasksPerSec)} | ${fmt(u.total, 1)} | ` +
        `${[u.db, u.gateway, u.workers, u.producers].map((v) => fmt(v, 1)).join(' / ')} | ${fmt(r.tasksPerSec / base, 3)} | ` +
        `${fmt(r.submitToAssignMs.p50, 1)} / ${fmt(r.submitToAssignMs.p99, 1)} | ${fmt(r.resultToOkMs.p50, 1)} / ${fmt(r.resultToOkMs.p99, 1)} | ${fmt(r.keyHandoffMs, 1)} |`
      );
    }),
    '',
    'Per task:',
    '',
    '| scenario | statements (sel/ins/upd/del/begin/commit/other) | commits = explicit + autocommit | write commits | row-lock waits | claim rounds | empty claims | gateway transactions / their round trips | frames to workers / their socket writes | CPU ms: mariadbd / gateway / workers / producers = total |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...done.map((r) => {
      const d = r.db;
      const k = d.breakdown;
      const other = (k.rollback ?? 0) + (k.savepoint ?? 0) + (k.call ?? 0) + (k.set ?? 0) + (k.other ?? 0);
      const parts = [k.select, k.insert, k.update, k.delete, k.begin, k.commit, other].map((v) => fmt(v, 1)).join('/');
      const sp = d.storedProgramStatements > 0.05 ? ` + ${fmt(d.storedProgramStatements, 1)} in stored programs` : '';
      const c = r.cpuMsPerTask;
      return (
        `| ${label(r.spec)} | ${fmt(d.statements, 1)} (${parts})${sp} | ${fmt(d.commits, 2)} = ${fmt(d.explicitCommits, 2)} + ${fmt(d.autocommitWrites, 2)} | ${fmt(d.writeCommits, 2)} | ` +
        `${fmt(d.rowLockWaits, 3)} | ${fmt(r.claimRoundsPerTask, 3)} | ${r.emptyClaimShare === null ? 'n/a' : `${fmt(r.emptyClaimShare * 100)} %`} | ` +
        `${r.roundTripsPerTask === null ? 'n/a' : `${fmt(r.gatewayTransactionsPerTask, 2)} / ${fmt(r.roundTripsPerTask, 2)}`} | ` +
        `${r.workerFramesPerTask === null ? 'n/a' : `${fmt(r.workerFramesPerTask, 2)} / ${fmt(r.workerWritesPerTask, 2)}`} | ` +
        `${fmt(c.mariadbd, 2)} / ${fmt(c.gateway, 2)} / ${fmt(c.workers, 2)} / ${fmt(c.producers, 2)} = ${fmt(c.total, 2)} |`
      );
    }),
    '',
    "Rows per task (row operations; rows changed per table from TABLE_STATISTICS, and × the table's indexes — an upper bound of index entries written):",
    '',
    '| scenario | Handler write / update / delete | rows changed | rows changed × indexes | by table: rows (× indexes) |',
    '| --- | --- | --- | --- | --- |',
    ...done.map((r) => {
      const o = r.db.rowOps;
      const t = Object.entries(r.db.tableRows).sort((a, b) => b[1].rowsXIndexes - a[1].rowsXIndexes);
      const rows = t.reduce((s, [, v]) => s + v.rows, 0);
      const x = t.reduce((s, [, v]) => s + v.rowsXIndexes, 0);
      const by = t.map(([k, v]) => `${k} ${fmt(v.rows, 2)} (${fmt(v.rowsXIndexes, 1)})`).join(', ');
      return `| ${label(r.spec)} | ${fmt(o.write, 2)} / ${fmt(o.update, 2)} / ${fmt(o.delete, 2)} | ${fmt(rows, 2)} | ${fmt(x, 1)} | ${by} |`;
    }),
    '',
    `gateway RSS after a full GC: ${fmt(x.idle.rssBeforeMb, 1)} MB before, ${fmt(x.idle.rssAfterMb, 1)} MB with ${fmt(x.idle.sessions)} more idle sessions → ` +
      `${fmt(x.idle.mbPer1000, 1)} MB per 1 000 sessions (JS heap in use + external: ${fmt(x.idle.heapBeforeMb, 1)} → ${fmt(x.idle.heapAfterMb, 1)} MB, ${fmt(x.idle.heapMbPer1000, 1)} MB per 1 000)`,
    ...(x.scheduled
      ? [
          '',
          `scheduled load: ${fmt(x.scheduled.schedules)} schedules firing every second for ${fmt(x.scheduled.seconds)} s next to ordinary producers: ` +
            `${fmt(x.scheduled.firesPerSec, 1)} fires/s, fire lag (scheduled_for → task committed) p50 ${fmt(x.scheduled.lagP50Ms)} ms / p99 ${fmt(x.scheduled.lagP99Ms)} ms ` +
            `(max ${fmt(x.scheduled.lagMaxMs)}), ordinary tasks ${fmt(x.scheduled.ordinaryTasksPerSec)}/s`,
        ]
      : []),
    ...(drainText(done, x.drainPeer ?? null, x.loadavg) ? ['', drainText(done, x.drainPeer ?? null, x.loadavg)] : []),
    ...(x.renewFlood ? ['', renewFloodText(x.renewFlood)] : []),
    ...(x.workflows?.length ? ['', workflowLoadText(x.workflows, unit).trimEnd()] : []),
  ];
  return lines.join('\n') + '\n';
}
