import client from 'prom-client';
import { transactionStats } from './db/pipeline.js';
import { transactionRetries } from './db/pool.js';
import { budgetStats } from './db/packet-budget.js';

export function createMetrics() {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const m = {
    registry,
    /** What GET /metrics serves; a multi-process node replaces it (server/cli/cluster-metrics.ts). */
    exposition: (): Promise<string> => registry.metrics(),
    tasksAccepted: new client.Counter({ name: 'orbit_tasks_accepted_total', help: 'tasks accepted by submit', registers: [registry] }),
    tasksAssigned: new client.Counter({ name: 'orbit_tasks_assigned_total', help: 'attempts granted by claims', registers: [registry] }),
    tasksFinished: new client.Counter({
      name: 'orbit_tasks_finished_total',
      help: 'tasks that reached a terminal state or review, by outcome',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    httpRequests: new client.Counter({
      name: 'orbit_http_requests_total',
      help: 'HTTP requests by route and status',
      labelNames: ['route', 'status'],
      registers: [registry],
    }),
    claimSeconds: new client.Histogram({
      name: 'orbit_claim_seconds',
      help: 'claim transaction latency',
      buckets: [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    }),
    claimRounds: new client.Counter({
      name: 'orbit_claim_rounds_total',
      help: 'claim rounds (one transaction for the due sessions of one application) by result: granted, empty, failed',
      labelNames: ['result'],
      registers: [registry],
    }),
    commitSeconds: new client.Histogram({
      name: 'orbit_commit_seconds',
      help: 'command transaction latency',
      labelNames: ['op'],
      buckets: [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    }),
    batchSize: new client.Histogram({
      name: 'orbit_frame_batch_size',
      help: 'start/result frames committed together in one coalesced transaction',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128],
      registers: [registry],
    }),
    commandBatchSize: new client.Histogram({
      name: 'orbit_command_batch_size',
      help: 'HTTP commands (everything with a receipt but submits) committed together in one coalesced transaction',
      buckets: [1, 2, 4, 8, 16, 32, 64],
      registers: [registry],
    }),
    liveSessions: new client.Gauge({ name: 'orbit_live_sessions', help: 'open worker sessions on this node', registers: [registry] }),
    sessionStalls: new client.Counter({
      name: 'orbit_session_stalls_total',
      help: 'times a session left a ping unanswered past ORBIT_PONG_TIMEOUT_MS and got no new work until it answered (a stopped or frozen worker)',
      registers: [registry],
    }),
    sweeperRecovered: new client.Counter({
      name: 'orbit_sweeper_recovered_total',
      help: 'attempts and tasks recovered by the sweeper, by kind',
      labelNames: ['kind'],
      registers: [registry],
    }),
    keyedWaitingNoCapable: new client.Gauge({
      name: 'orbit_keyed_tasks_waiting_without_capable_session',
      help: 'keyed WAITING tasks in queues that no live session with concurrency_keys consumes (any node)',
      // Read from the database: every process of a node sees the same count (not a sum).
      aggregator: 'max',
      registers: [registry],
    }),
    dbTransactions: new client.Counter({
      name: 'orbit_db_transactions_total',
      help: 'database transactions this process ran (transactionOn: every claim, submit batch, frame batch, command)',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(transactionStats.transactions);
      },
    }),
    dbTransactionRoundTrips: new client.Counter({
      name: 'orbit_db_transaction_round_trips_total',
      help: 'round trips to the database inside those transactions (queued writes travel with the next statement: db/pipeline.ts)',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(transactionStats.roundTrips);
      },
    }),
    dbTransactionRetries: new client.Counter({
      name: 'orbit_db_transaction_retries_total',
      help: 'transactions rolled back by InnoDB and run again, by reason: deadlock (1213), lock_wait (1205, or a NOWAIT lock that was held)',
      labelNames: ['reason'],
      registers: [registry],
      collect() {
        this.reset();
        this.inc({ reason: 'deadlock' }, transactionRetries.deadlock);
        this.inc({ reason: 'lock_wait' }, transactionRetries.lockWait);
      },
    }),
    dbStatementBudget: new client.Gauge({
      name: 'orbit_db_statement_budget_bytes',
      help: "largest statement text one database round trip carries: the server's max_allowed_packet read at start, less 64 KiB headroom (db/packet-budget.ts)",
      aggregator: 'min',
      registers: [registry],
    }),
    dbBudgetSplits: new client.Counter({
      name: 'orbit_db_budget_splits_total',
      help: 'extra statements or round trips because coalesced values would have exceeded the statement budget',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(budgetStats.splits);
      },
    }),
    tokenExhausted: new client.Counter({
      name: 'orbit_token_exhaustion_refusals_total',
      help: 'claims refused because a key token is at 2^64-1',
      registers: [registry],
    }),
    internalErrors: new client.Counter({
      name: 'orbit_internal_errors_total',
      help: 'unexpected exceptions caught by an error boundary (the request or session ended; the node kept serving), by where',
      labelNames: ['where'],
      registers: [registry],
    }),
    scheduleFires: new client.Counter({
      name: 'orbit_schedule_fires_total',
      help: 'schedule fire times settled by this node, by outcome (created, skipped_overlap, skipped_catchup, failed_quota)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    scheduleLag: new client.Histogram({
      name: 'orbit_schedule_lag_seconds',
      help: 'from a fire time to the commit of its fire (fires on time; catch-up fires are counted by outcome instead)',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5],
      registers: [registry],
    }),
    sessionFramesInFlight: new client.Gauge({
      name: 'orbit_session_frames_in_flight',
      help: 'worker frames received and not yet answered, over the sessions of this node',
      registers: [registry],
    }),
    sessionsPaused: new client.Gauge({
      name: 'orbit_sessions_paused',
      help: 'worker sessions whose socket is not read now: at their frames-in-flight or bytes limit',
      registers: [registry],
    }),
    sessionPauses: new client.Counter({
      name: 'orbit_session_pauses_total',
      help: 'times a worker session reached its frames-in-flight or bytes limit and its socket was paused',
      registers: [registry],
    }),
    framesSent: new client.Counter({
      name: 'orbit_worker_frames_sent_total',
      help: 'WebSocket frames (messages, pings, pongs) sent to worker sessions',
      registers: [registry],
    }),
    socketFlushes: new client.Counter({
      name: 'orbit_worker_socket_flushes_total',
      help: 'socket writes of worker sessions: each carries the frames sent to that session in one event-loop turn',
      registers: [registry],
    }),
    renewBatchSize: new client.Histogram({
      name: 'orbit_renew_batch_size',
      help: 'renew frames of one session committed together in one renew transaction',
      buckets: [1, 4, 16, 64, 256, 1024, 2048, 8192],
      registers: [registry],
    }),
    sessionTxWaiting: new client.Gauge({
      name: 'orbit_session_tx_waiting',
      help: "worker sessions' own transactions (renew, hello, session row) waiting for their application's turn at the pool",
      registers: [registry],
    }),
  };
  return m;
}
export type Metrics = ReturnType<typeof createMetrics>;
