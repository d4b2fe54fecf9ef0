import client from 'prom-client';
import { transactionStats } from './db/pipeline.js';
import { transactionRetries } from './db/pool.js';
import { budgetStats } from './db/packet-budget.js';
import type { Pool } from './db/pool.js';
import { waitingDepthByQueue } from './db/task-gauges.js';
import { countByState } from './db/workflow-runs.js';

const LATENCY_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

export function createMetrics() {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const counter = (name: string, help: string, labelNames: string[] = []) => new client.Counter({ name, help, labelNames, registers });
  /** A counter that reports a process-wide total kept outside prom-client. */
  const total = (name: string, help: string, read: () => number) =>
    new client.Counter({
      name,
      help,
      registers,
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  const gauge = (name: string, help: string, aggregator?: 'max' | 'min') => new client.Gauge({ name, help, registers, ...(aggregator && { aggregator }) });
  const histogram = (name: string, help: string, buckets: number[], labelNames: string[] = []) =>
    new client.Histogram({ name, help, buckets, labelNames, registers });
  return {
    registry,
    /** What GET /metrics serves; a multi-process node replaces it (server/cli/cluster-metrics.ts). */
    exposition: (): Promise<string> => registry.metrics(),
    tasksAccepted: counter('orbit_tasks_accepted_total', 'tasks accepted by submit'),
    tasksAssigned: counter('orbit_tasks_assigned_total', 'attempts granted by claims'),
    tasksFinished: counter('orbit_tasks_finished_total', 'tasks that reached a terminal state or review, by outcome', ['outcome']),
    httpRequests: counter('orbit_http_requests_total', 'HTTP requests by route and status', ['route', 'status']),
    claimSeconds: histogram('orbit_claim_seconds', 'claim transaction latency', LATENCY_BUCKETS),
    claimRounds: counter(
      'orbit_claim_rounds_total',
      'claim rounds (one transaction for the due sessions of one application) by result: granted, empty, failed',
      ['result'],
    ),
    commitSeconds: histogram('orbit_commit_seconds', 'command transaction latency', LATENCY_BUCKETS, ['op']),
    batchSize: histogram('orbit_frame_batch_size', 'start/result frames committed together in one coalesced transaction', [1, 2, 4, 8, 16, 32, 64, 128]),
    commandBatchSize: histogram(
      'orbit_command_batch_size',
      'HTTP commands (everything with a receipt but submits) committed together in one coalesced transaction',
      [1, 2, 4, 8, 16, 32, 64],
    ),
    liveSessions: gauge('orbit_live_sessions', 'open worker sessions on this node'),
    sessionStalls: counter(
      'orbit_session_stalls_total',
      'times a session left a ping unanswered past ORBIT_PONG_TIMEOUT_MS and got no new work until it answered (a stopped or frozen worker)',
    ),
    sweeperRecovered: counter('orbit_sweeper_recovered_total', 'attempts and tasks recovered by the sweeper, by kind', ['kind']),
    // Read from the database: every process of a node sees the same count (not a sum).
    keyedWaitingNoCapable: gauge(
      'orbit_keyed_tasks_waiting_without_capable_session',
      'keyed WAITING tasks in queues that no live session with concurrency_keys consumes (any node)',
      'max',
    ),
    dbTransactions: total(
      'orbit_db_transactions_total',
      'database transactions this process ran (transactionOn: every claim, submit batch, frame batch, command)',
      () => transactionStats.transactions,
    ),
    dbTransactionRoundTrips: total(
      'orbit_db_transaction_round_trips_total',
      'round trips to the database inside those transactions (queued writes travel with the next statement: db/pipeline.ts)',
      () => transactionStats.roundTrips,
    ),
    dbTransactionRetries: new client.Counter({
      name: 'orbit_db_transaction_retries_total',
      help: 'transactions rolled back by InnoDB and run again, by reason: deadlock (1213), lock_wait (1205, or a NOWAIT lock that was held)',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        this.inc({ reason: 'deadlock' }, transactionRetries.deadlock);
        this.inc({ reason: 'lock_wait' }, transactionRetries.lockWait);
      },
    }),
    dbStatementBudget: gauge(
      'orbit_db_statement_budget_bytes',
      "largest statement text one database round trip carries: the server's max_allowed_packet read at start, less 64 KiB headroom (db/packet-budget.ts)",
      'min',
    ),
    dbBudgetSplits: total(
      'orbit_db_budget_splits_total',
      'extra statements or round trips because coalesced values would have exceeded the statement budget',
      () => budgetStats.splits,
    ),
    tokenExhausted: counter('orbit_token_exhaustion_refusals_total', 'claims refused because a key token is at 2^64-1'),
    internalErrors: counter(
      'orbit_internal_errors_total',
      'unexpected exceptions caught by an error boundary (the request or session ended; the node kept serving), by where',
      ['where'],
    ),
    scheduleFires: counter(
      'orbit_schedule_fires_total',
      'schedule fire times settled by this node, by outcome (created, skipped_overlap, skipped_catchup, failed_quota)',
      ['outcome'],
    ),
    scheduleLag: histogram(
      'orbit_schedule_lag_seconds',
      'from a fire time to the commit of its fire (fires on time; catch-up fires are counted by outcome instead)',
      [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5],
    ),
    sessionFramesInFlight: gauge('orbit_session_frames_in_flight', 'worker frames received and not yet answered, over the sessions of this node'),
    sessionsPaused: gauge('orbit_sessions_paused', 'worker sessions whose socket is not read now: at their frames-in-flight or bytes limit'),
    sessionPauses: counter('orbit_session_pauses_total', 'times a worker session reached its frames-in-flight or bytes limit and its socket was paused'),
    framesSent: counter('orbit_worker_frames_sent_total', 'WebSocket frames (messages, pings, pongs) sent to worker sessions'),
    socketFlushes: counter(
      'orbit_worker_socket_flushes_total',
      'socket writes of worker sessions: each carries the frames sent to that session in one event-loop turn',
    ),
    renewBatchSize: histogram(
      'orbit_renew_batch_size',
      'renew frames of one session committed together in one renew transaction',
      [1, 4, 16, 64, 256, 1024, 2048, 8192],
    ),
    sessionTxWaiting: gauge(
      'orbit_session_tx_waiting',
      "worker sessions' own transactions (renew, hello, session row) waiting for their application's turn at the pool",
    ),
  };
}
export type Metrics = ReturnType<typeof createMetrics>;

/** mysql2 internals (lib/base/pool.js; the promise pool wraps the core pool as `.pool`). */
interface CorePool {
  _allConnections?: { length: number };
  _freeConnections?: { length: number };
  _connectionQueue?: { length: number };
}

/** Checked out and waiting, as the one row of the pool gauges; null when the pool's internals are
 * not where mysql2 3.x keeps them. */
async function poolUsage(pool: Pool): Promise<{ inUse: number; waiting: number }[] | null> {
  const core = (pool as unknown as { pool?: CorePool }).pool;
  if (!core?._allConnections || !core._freeConnections || !core._connectionQueue) return null;
  return [{ inUse: core._allConnections.length - core._freeConnections.length, waiting: core._connectionQueue.length }];
}

/** `read`, reused for `ms`; null (keeping the gauges' last values) while the database is unreachable. */
function cachedRead<R>(ms: number, read: () => Promise<R[]>): () => Promise<R[] | null> {
  let last: { at: number; rows: R[] } | null = null;
  return async () => {
    if (last && Date.now() - last.at < ms) return last.rows;
    const rows = await read().catch(() => null);
    if (rows) last = { at: Date.now(), rows };
    return rows;
  };
}

/**
 * Gauges read at scrape time. Queue depth, oldest-waiting age and workflow runs and steps by state
 * come from the database, so that they cover every node (counting on the node that committed would
 * miss the others); the reads walk rows, so they are cached briefly to bound what frequent scrapes
 * cost. The pool's gauges come from mysql2's pool: a waiting count above zero means a flood got
 * past the sessions' transaction admission (`admission`, dispatch/coalesce.ts).
 */
export function registerDbGauges(metrics: Metrics, pool: Pool): void {
  const registers = [metrics.registry];
  const fromRows = <L extends string, R>(
    name: string,
    help: string,
    labelNames: L[],
    rows: () => Promise<R[] | null>,
    each: (r: R) => [Partial<Record<L, string>>, number],
    aggregator?: 'max',
  ) => {
    const g: client.Gauge<L> = new client.Gauge({
      name,
      help,
      labelNames,
      registers,
      ...(aggregator && { aggregator }),
      async collect() {
        const rs = await rows();
        if (!rs) return;
        g.reset();
        for (const r of rs) g.set(...each(r));
      },
    });
  };
  // Both queue gauges come from one query; whichever is collected first refreshes the cache.
  const depths = cachedRead(2_000, async () =>
    (await waitingDepthByQueue(pool)).map((r) => ({
      labels: { queue_id: r.queue_id, queue: r.name },
      depth: Number(r.depth),
      oldest_s: r.age_us === null ? 0 : Math.max(0, Number(r.age_us) / 1e6),
    })),
  );
  // Every process of a node reads the same rows: ORBIT_PROCESSES > 1 reports one, not a sum.
  type Depth = NonNullable<Awaited<ReturnType<typeof depths>>>[number];
  const queueGauge = (name: string, help: string, value: (r: Depth) => number) =>
    fromRows(name, help, ['queue_id', 'queue'], depths, (r) => [r.labels, value(r)], 'max');
  queueGauge('orbit_queue_depth', 'WAITING tasks per queue (all nodes; from the database at scrape time)', (r) => r.depth);
  queueGauge(
    'orbit_queue_oldest_waiting_seconds',
    'age of the oldest due WAITING task per queue, in seconds (from the database at scrape time)',
    (r) => r.oldest_s,
  );
  const byState = (r: { state: string; n: number }): [{ state: string }, number] => [{ state: r.state }, r.n];
  const runs = cachedRead(5_000, () => countByState(pool, 'workflow_runs'));
  const steps = cachedRead(5_000, () => countByState(pool, 'workflow_run_steps'));
  fromRows('orbit_workflow_runs_total', 'workflow runs by state (all nodes; from the database at scrape time)', ['state'], runs, byState);
  fromRows('orbit_workflow_steps_total', 'workflow run steps by state (all nodes; from the database at scrape time)', ['state'], steps, byState);
  const usage = () => poolUsage(pool);
  fromRows('orbit_db_pool_connections_in_use', 'database pool connections checked out', [], usage, (u) => [{}, u.inUse]);
  fromRows('orbit_db_pool_queue_depth', 'requests waiting for a database pool connection', [], usage, (u) => [{}, u.waiting]);
}
