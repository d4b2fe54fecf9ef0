-- Orbit initial schema. Forward-only. No foreign keys: integrity comes from transactions and
-- unique indexes. Ids are 32 lowercase hex characters (128 random bits). Every time is
-- DATETIME(3) in UTC taken from the database clock (UTC_TIMESTAMP(3)). Every table carries
-- namespace_id where it belongs so that the data model can be partitioned by namespace.

CREATE TABLE applications (
  id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'application id (32 hex)',
  name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'unique human name of the tenant',
  max_active_attempts INT UNSIGNED NOT NULL DEFAULT 10000 COMMENT 'limit of LEASED+RUNNING attempts across the application',
  active_attempts INT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'current LEASED+RUNNING attempts (a keyed attempt counts once); changed only in claim/release transactions',
  max_unfinished_tasks INT UNSIGNED NOT NULL DEFAULT 1000000 COMMENT 'limit of WAITING+LEASED+RUNNING+NEEDS_REVIEW tasks',
  unfinished_tasks INT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'current unfinished tasks; changed in the same transaction as the task state',
  created_at DATETIME(3) NOT NULL COMMENT 'creation time (UTC, database clock)',
  updated_at DATETIME(3) NOT NULL COMMENT 'last change (UTC, database clock)',
  PRIMARY KEY (id),
  UNIQUE KEY uq_applications_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='tenants: own namespaces and the quotas of active attempts and unfinished tasks';

CREATE TABLE namespaces (
  id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace id (32 hex)',
  application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'owning application',
  name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'name, unique within the application',
  environment VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'free-form environment label (dev, test, prod)',
  created_at DATETIME(3) NOT NULL COMMENT 'creation time',
  PRIMARY KEY (id),
  UNIQUE KEY uq_namespaces_app_name (application_id, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='isolation units: resource keys, idempotency keys and result streams are per namespace';

CREATE TABLE queues (
  id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'queue id (32 hex)',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'owning namespace',
  name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'name, unique in the namespace forever (never reused after retirement)',
  revision BIGINT UNSIGNED NOT NULL DEFAULT 1 COMMENT 'bumped by every configuration change, pause, resume and retire',
  paused TINYINT(1) NOT NULL DEFAULT 0 COMMENT '1 = accepts tasks but dispatches nothing',
  max_active_attempts INT UNSIGNED NOT NULL COMMENT 'queue permit limit: LEASED+RUNNING attempts',
  active_attempts INT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'current LEASED+RUNNING attempts; changed only in claim/release transactions',
  lease_seconds INT UNSIGNED NOT NULL COMMENT 'lease length granted by claim, start and renew',
  retry_max_attempts INT UNSIGNED NOT NULL COMMENT 'default max_attempts of tasks submitted without one',
  retry_initial_backoff_ms INT UNSIGNED NOT NULL COMMENT 'first retry backoff',
  retry_max_backoff_ms INT UNSIGNED NOT NULL COMMENT 'backoff cap',
  retry_multiplier DOUBLE NOT NULL COMMENT 'exponential backoff multiplier',
  created_at DATETIME(3) NOT NULL COMMENT 'creation time',
  updated_at DATETIME(3) NOT NULL COMMENT 'last change',
  retired_at DATETIME(3) NULL COMMENT 'set once when retired; never cleared',
  retire_reason VARCHAR(512) NULL COMMENT 'reason given at retirement',
  PRIMARY KEY (id),
  UNIQUE KEY uq_queues_ns_name (namespace_id, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='named task channels with permit limit, lease length and retry policy';

CREATE TABLE credentials (
  id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'credential id (32 hex)',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'the one namespace this credential acts in',
  name VARCHAR(128) NOT NULL COMMENT 'label for operators',
  token_hash BINARY(32) NOT NULL COMMENT 'SHA-256 of the bearer token; the token itself is never stored',
  scopes VARCHAR(512) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'space-separated scopes',
  queue_ids TEXT CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'JSON array of allowed queue ids; NULL = every queue of the namespace (*)',
  created_at DATETIME(3) NOT NULL COMMENT 'creation time',
  revoked_at DATETIME(3) NULL COMMENT 'set when revoked; a revoked token is UNAUTHENTICATED',
  PRIMARY KEY (id),
  UNIQUE KEY uq_credentials_token_hash (token_hash),
  KEY ix_credentials_namespace (namespace_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='bearer credentials bound to one namespace, with scopes and queue list';

CREATE TABLE tasks (
  id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'task id (32 hex)',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'owning namespace',
  application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'owning application (quota accounting)',
  queue_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'queue the task was submitted to',
  seq BIGINT UNSIGNED NOT NULL AUTO_INCREMENT COMMENT 'insertion order: age for dispatch order, stable order and cursor for listings',
  handler VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'handler name',
  handler_version VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'handler version',
  payload_version VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'payload schema version',
  payload MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL COMMENT 'payload as JSON text (<= 256 KiB)',
  business_key VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL COMMENT 'caller correlation id; no concurrency or dedupe meaning',
  concurrency_key VARBINARY(764) NULL COMMENT 'resource key as exact UTF-8 bytes (<= 191 code points); frozen at acceptance',
  priority TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT '0-9, higher dispatched first',
  state ENUM('WAITING','LEASED','RUNNING','NEEDS_REVIEW','SUCCEEDED','FAILED','CANCELLED','DEADLINE_EXCEEDED') CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'task state (dispatch.md)',
  attempts_made INT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'attempts that reached RUNNING',
  attempts_created INT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'attempts ever leased (attempt_no of the newest attempt)',
  max_attempts INT UNSIGNED NOT NULL COMMENT 'started attempts that may be consumed',
  not_before DATETIME(3) NULL COMMENT 'earliest dispatch time (caller-set or retry backoff)',
  deadline_at DATETIME(3) NOT NULL COMMENT 'total deadline from acceptance',
  created_at DATETIME(3) NOT NULL COMMENT 'acceptance time',
  updated_at DATETIME(3) NOT NULL COMMENT 'last state change',
  finished_at DATETIME(3) NULL COMMENT 'time the task became terminal',
  current_attempt_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'live attempt (LEASED/RUNNING) or NULL',
  result_outcome VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'succeeded|failed|unknown|cancelled|deadline_exceeded once terminal or in review',
  result_output MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL COMMENT 'worker output as JSON text',
  result_error_code VARCHAR(128) NULL COMMENT 'error code of the final outcome',
  result_error_message TEXT NULL COMMENT 'error message of the final outcome',
  PRIMARY KEY (id),
  UNIQUE KEY uq_tasks_seq (seq),
  KEY ix_tasks_claim (queue_id, state, priority, seq) COMMENT 'claim: WAITING tasks of a queue by priority then age',
  KEY ix_tasks_deadline (state, deadline_at) COMMENT 'sweeper: WAITING tasks past deadline',
  KEY ix_tasks_ns_seq (namespace_id, seq) COMMENT 'listing newest first',
  KEY ix_tasks_ns_queue_seq (namespace_id, queue_id, seq) COMMENT 'listing by queue',
  KEY ix_tasks_ns_key (namespace_id, concurrency_key, state) COMMENT 'listing by key; keyed waiting checks',
  KEY ix_tasks_ns_business_key (namespace_id, business_key) COMMENT 'listing by business key',
  KEY ix_tasks_queue_unfinished (queue_id, state) COMMENT 'retirement checks'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='accepted commands to run handler@version on a payload';

CREATE TABLE attempts (
  id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'attempt id (32 hex)',
  task_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'task this attempt leases',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace of the task',
  application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'application of the task (active count)',
  queue_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'queue of the task (queue permit)',
  attempt_no INT UNSIGNED NOT NULL COMMENT '1-based number within the task',
  state ENUM('LEASED','RUNNING','SUCCEEDED','FAILED','RETRY','UNKNOWN','EXPIRED','CANCELLED') CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'attempt state (dispatch.md)',
  worker_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'worker identity holding the lease',
  session_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'session currently bound (changes on resume)',
  concurrency_key VARBINARY(764) NULL COMMENT 'copy of the task key (NULL for unkeyed)',
  concurrency_token BIGINT UNSIGNED NULL COMMENT 'fencing token granted with the key permit; frozen for the attempt',
  leased_at DATETIME(3) NOT NULL COMMENT 'claim time',
  started_at DATETIME(3) NULL COMMENT 'start confirmation time',
  lease_expires_at DATETIME(3) NOT NULL COMMENT 'lease end (database clock)',
  finished_at DATETIME(3) NULL COMMENT 'time the attempt left LEASED/RUNNING',
  outcome VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'reported or derived outcome',
  output MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL COMMENT 'worker output JSON text',
  error_code VARCHAR(128) NULL COMMENT 'error code reported or derived',
  error_message TEXT NULL COMMENT 'error message',
  result_fingerprint CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'SHA-256 of the accepted result frame content, for duplicate detection',
  result_reply TEXT NULL COMMENT 'stored result.ok reply JSON returned again for duplicates',
  PRIMARY KEY (id),
  UNIQUE KEY uq_attempts_task_no (task_id, attempt_no),
  KEY ix_attempts_live_expiry (state, lease_expires_at) COMMENT 'sweeper: live attempts past their lease',
  KEY ix_attempts_worker (namespace_id, worker_id, state) COMMENT 'resume and release at reconnect',
  KEY ix_attempts_session (session_id, state) COMMENT 'session capacity accounting'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='leases of tasks to workers; the execution history';

CREATE TABLE resource_keys (
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace of the key',
  concurrency_key VARBINARY(764) NOT NULL COMMENT 'the key as exact UTF-8 bytes',
  highest_token BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'highest token ever granted; never decreases, never reset',
  holder_attempt_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'attempt holding the permit, or NULL when free',
  version BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'bumped by every grant and release',
  created_at DATETIME(3) NOT NULL COMMENT 'first use of the key',
  updated_at DATETIME(3) NOT NULL COMMENT 'last grant or release',
  PRIMARY KEY (namespace_id, concurrency_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='one row per resource key: permit holder and monotonic fencing token; never deleted';

CREATE TABLE receipts (
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace the key is scoped to',
  idempotency_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'Idempotency-Key header value',
  operation VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'method + path template',
  target_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '' COMMENT 'id in the path, empty for creates',
  fingerprint CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'SHA-256 of the normalized request',
  http_status SMALLINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'status of the original response; 0 while the command runs',
  response_data MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL COMMENT 'frozen response data JSON',
  resource_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'resource created or changed',
  credential_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'credential that sent the command',
  created_at DATETIME(3) NOT NULL COMMENT 'acceptance time',
  PRIMARY KEY (namespace_id, idempotency_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='frozen responses of accepted commands, stored with the effect; history, not cache';

CREATE TABLE worker_identities (
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace of the credential that first said hello',
  worker_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'process identity',
  concurrency_keys TINYINT(1) NOT NULL COMMENT 'capability flag frozen at the first hello',
  current_session_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'newest session (a newer one supersedes older ones)',
  agent VARCHAR(64) NULL COMMENT 'agent string of the newest hello',
  created_at DATETIME(3) NOT NULL COMMENT 'first hello',
  updated_at DATETIME(3) NOT NULL COMMENT 'newest hello',
  PRIMARY KEY (namespace_id, worker_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='worker process identities and their frozen capability flag';

CREATE TABLE worker_sessions (
  id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'session id (32 hex)',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace',
  worker_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'worker identity',
  credential_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'credential used at the handshake',
  node_id VARCHAR(128) NOT NULL COMMENT 'gateway node holding the socket',
  queue_ids TEXT CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'JSON array of queue ids from hello',
  capacity INT UNSIGNED NOT NULL COMMENT 'current intake capacity',
  concurrency_keys TINYINT(1) NOT NULL COMMENT 'capability flag of the identity',
  handlers TEXT NULL COMMENT 'JSON handler filter from hello, NULL = any',
  state ENUM('OPEN','DRAINING','CLOSED') CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'session state',
  connected_at DATETIME(3) NOT NULL COMMENT 'hello time',
  last_seen_at DATETIME(3) NOT NULL COMMENT 'last frame or pong (coarse)',
  closed_at DATETIME(3) NULL COMMENT 'close time',
  close_code SMALLINT UNSIGNED NULL COMMENT 'WebSocket close code',
  PRIMARY KEY (id),
  KEY ix_sessions_worker (namespace_id, worker_id),
  KEY ix_sessions_state (state, namespace_id) COMMENT 'capable-session checks'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='WebSocket connections of worker identities';

CREATE TABLE stream_heads (
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace of the result stream',
  last_sequence BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'highest sequence allocated; allocation locks this row until commit, so sequences commit in order and last committed value is the watermark',
  updated_at DATETIME(3) NOT NULL COMMENT 'last allocation',
  PRIMARY KEY (namespace_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='per-namespace result stream head and committed watermark';

CREATE TABLE result_events (
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace of the stream',
  sequence BIGINT UNSIGNED NOT NULL COMMENT 'strictly increasing per namespace',
  type VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'task.succeeded|task.failed|task.cancelled|task.deadline_exceeded|task.needs_review',
  task_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'task the event reports',
  queue_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'queue of the task',
  occurred_at DATETIME(3) NOT NULL COMMENT 'transition time',
  result TEXT NULL COMMENT 'result object JSON',
  PRIMARY KEY (namespace_id, sequence),
  KEY ix_events_queue (namespace_id, queue_id, sequence),
  KEY ix_events_time (occurred_at) COMMENT 'retention pruning'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='per-namespace ordered log of task outcomes';

CREATE TABLE subscriptions (
  id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'subscription id (32 hex)',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace',
  name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'name, unique in the namespace forever',
  queue_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'queue whose events it consumes',
  event_types VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'JSON array of event types',
  owner_credential_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'creating credential; only it sees the subscription',
  enabled TINYINT(1) NOT NULL DEFAULT 1 COMMENT '0 once retired',
  paused TINYINT(1) NOT NULL DEFAULT 0 COMMENT '1 = leases nothing',
  cursor_sequence BIGINT UNSIGNED NOT NULL COMMENT 'events at or below are materialized into deliveries',
  revision BIGINT UNSIGNED NOT NULL DEFAULT 1 COMMENT 'bumped by every change',
  created_at DATETIME(3) NOT NULL COMMENT 'creation time',
  updated_at DATETIME(3) NOT NULL COMMENT 'last change',
  retired_at DATETIME(3) NULL COMMENT 'retirement time',
  retired_sequence BIGINT UNSIGNED NULL COMMENT 'watermark at retirement',
  PRIMARY KEY (id),
  UNIQUE KEY uq_subscriptions_ns_name (namespace_id, name),
  KEY ix_subscriptions_queue (queue_id, enabled)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='consumers of a queue''s result events';

CREATE TABLE deliveries (
  id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'delivery id (32 hex)',
  subscription_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'subscription',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace',
  sequence BIGINT UNSIGNED NOT NULL COMMENT 'event sequence delivered',
  state ENUM('PENDING','LEASED','EXPIRED','ACKED') CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'delivery state',
  attempts INT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'times leased',
  lease_expires_at DATETIME(3) NULL COMMENT 'lease end',
  acked_at DATETIME(3) NULL COMMENT 'ack time',
  created_at DATETIME(3) NOT NULL COMMENT 'materialization time',
  PRIMARY KEY (id),
  UNIQUE KEY uq_deliveries_sub_seq (subscription_id, sequence),
  KEY ix_deliveries_sub_state (subscription_id, state, sequence)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='at-least-once deliveries of events to subscriptions';

CREATE TABLE audit_log (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT COMMENT 'append order',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'namespace acted in (NULL for application-level admin actions)',
  actor VARCHAR(128) NOT NULL COMMENT 'credential id or admin CLI',
  action VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'what happened',
  target_type VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'kind of resource',
  target_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'resource id',
  details TEXT NULL COMMENT 'JSON details, never secrets',
  created_at DATETIME(3) NOT NULL COMMENT 'time',
  PRIMARY KEY (id),
  KEY ix_audit_target (target_type, target_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='administrative history: credentials, queue changes, retirements';
