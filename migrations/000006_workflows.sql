-- Workflows (../shared/spec/workflows.md): definitions, their published immutable versions (the step
-- graph and the set of queues it names), runs pinned to a version, the steps of each run, the tasks
-- each step created (one per (run, step, index)) and the signals sent to runs. Forward-only, no
-- foreign keys; every row carries its namespace and application so that every transaction (an
-- advancement included) touches one application's rows only.
--
-- Exactly-once advancement: a step's tasks are created in the transaction that started the step,
-- each with its workflow_step_tasks row, whose primary key (run_id, step_key, item_index) refuses a
-- second task for the same element. A step's finish, the decision of its children and their tasks
-- commit with the event that finished it (docs/design.md "Workflows").
--
-- Plain tasks pay nothing for this: the three workflow columns added to tasks are NULL on them and
-- carry no index (a step task's row is found from workflow_step_tasks, and a task row read by a
-- result already names its run and step).

CREATE TABLE workflows (
  id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'workflow id (32 hex)',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'owning namespace',
  application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'application of the namespace (runs count against its quota)',
  name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'name, unique in the namespace forever (never reused after retirement)',
  revision BIGINT UNSIGNED NOT NULL DEFAULT 1 COMMENT 'bumped by publishing a version and by retirement (runs do not bump it)',
  current_version INT UNSIGNED NOT NULL COMMENT 'number of the version runs started without "version" use (the newest published)',
  created_at DATETIME(3) NOT NULL COMMENT 'creation time (UTC, database clock)',
  updated_at DATETIME(3) NOT NULL COMMENT 'last change (publish, retire)',
  retired_at DATETIME(3) NULL COMMENT 'set once when retired; never cleared; runs can no longer start',
  retire_reason VARCHAR(512) NULL COMMENT 'reason given at retirement',
  PRIMARY KEY (id),
  UNIQUE KEY uq_workflows_ns_name (namespace_id, name) COMMENT 'names unique forever; listing by name',
  KEY ix_workflows_ns_retired (namespace_id, retired_at) COMMENT 'the namespace quota of non-retired workflows'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='workflow definitions: a name and a sequence of published versions';

CREATE TABLE workflow_versions (
  workflow_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'workflow the version belongs to',
  number INT UNSIGNED NOT NULL COMMENT '1-based version number; never changed after publication',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace of the workflow',
  application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'application of the workflow',
  steps MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL COMMENT 'JSON: the normalized steps in the order published (defaults applied; 50 steps x 64 KiB params fit)',
  step_count TINYINT UNSIGNED NOT NULL COMMENT 'number of steps (1-50)',
  queue_ids TEXT CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'JSON array: every queue a step names, sorted, once each (also rows of workflow_version_queues)',
  created_at DATETIME(3) NOT NULL COMMENT 'publication time (database clock)',
  created_by CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'credential that published it',
  PRIMARY KEY (workflow_id, number)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='published, immutable versions of workflows (the step graph)';

CREATE TABLE workflow_version_queues (
  queue_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'a queue some step of the version names, reached by a run or not',
  workflow_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'workflow of the version',
  version INT UNSIGNED NOT NULL COMMENT 'version number',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace of the workflow',
  application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'application of the workflow',
  PRIMARY KEY (queue_id, workflow_id, version) COMMENT 'queue retirement: the versions that reference a queue (then their unfinished runs)'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='the set of queues each workflow version names, one row per (queue, version), written with the version';

CREATE TABLE workflow_runs (
  id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'run id (32 hex)',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'owning namespace',
  application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'owning application (its step tasks count against its quota)',
  workflow_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'workflow of the run',
  version INT UNSIGNED NOT NULL COMMENT 'version the run is pinned to for its whole life',
  seq BIGINT UNSIGNED NOT NULL AUTO_INCREMENT COMMENT 'start order: oldest run first for READY steps, stable order and cursor for listings',
  state ENUM('RUNNING','PAUSED','SUCCEEDED','FAILED','CANCELLED') CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'run state (workflows.md); the last three are final',
  input MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL COMMENT 'run input as JSON text (<= 256 KiB; null when omitted)',
  concurrency_key VARBINARY(764) NULL COMMENT 'the run key (exact UTF-8 bytes, <= 191 code points) that use_run_key steps give their tasks; NULL = none',
  created_at DATETIME(3) NOT NULL COMMENT 'start time (database clock); the root steps started in the same transaction',
  updated_at DATETIME(3) NOT NULL COMMENT 'last change of the run or one of its steps',
  finished_at DATETIME(3) NULL COMMENT 'time the run became final',
  cancel_reason VARCHAR(512) NULL COMMENT 'reason given to :cancel',
  created_by CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'credential that started it',
  PRIMARY KEY (id),
  UNIQUE KEY uq_workflow_runs_seq (seq),
  KEY ix_workflow_runs_ns_seq (namespace_id, seq) COMMENT 'listing newest first',
  KEY ix_workflow_runs_ns_workflow_seq (namespace_id, workflow_id, seq) COMMENT 'listing by workflow',
  KEY ix_workflow_runs_ns_state_seq (namespace_id, state, seq) COMMENT 'listing by state',
  KEY ix_workflow_runs_unfinished (workflow_id, state, version) COMMENT 'retirement: unfinished (RUNNING, PAUSED) runs of a workflow, and of the versions that reference a queue'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='executions of a workflow version';

CREATE TABLE workflow_run_steps (
  run_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'run of the step',
  step_key VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'key of the step in the run''s version',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace of the run',
  application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'application of the run',
  run_seq BIGINT UNSIGNED NOT NULL COMMENT 'seq of the run (oldest run first when READY steps wait for quota)',
  state ENUM('PENDING','READY','ACTIVE','WAITING_SIGNAL','IN_REVIEW','SUCCEEDED','FAILED','SKIPPED','CANCELLED') CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'step state (workflows.md)',
  ready_cause ENUM('paused','quota') CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'READY steps: waits for :resume (paused) or for room in the unfinished-task quota (quota, the sweeper starts it); NULL otherwise',
  skipped_because ENUM('parent_failed','condition') CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'SKIPPED steps: why (parent_failed counts as failed for its children, condition as skipped)',
  task_count INT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'tasks the step created when it started (for_each: one per element, 0-1000)',
  output MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL COMMENT 'SUCCEEDED steps: JSON output (the task''s output, a signal''s payload); NULL for for_each steps, whose output is read from their tasks in element order (up to 1000 x 256 KiB)',
  error_code VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'FAILED steps: error code (FOR_EACH_INVALID, SIGNAL_TIMEOUT, PAYLOAD_TOO_LARGE, or the failing task''s)',
  error_message TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL COMMENT 'FAILED steps: error message',
  signal_deadline_at DATETIME(3) NULL COMMENT 'WAITING_SIGNAL steps: start + timeout_seconds; the sweeper fails the step with SIGNAL_TIMEOUT after it (also while the run is paused)',
  started_at DATETIME(3) NULL COMMENT 'time the step started (its tasks created, or its signal awaited)',
  finished_at DATETIME(3) NULL COMMENT 'time the step finished',
  updated_at DATETIME(3) NOT NULL COMMENT 'last change',
  PRIMARY KEY (run_id, step_key) COMMENT 'the run''s steps, read (and locked) together by every advancement',
  KEY ix_workflow_run_steps_quota (ready_cause, application_id, run_seq) COMMENT 'sweeper: READY steps waiting for quota, oldest run first',
  KEY ix_workflow_run_steps_signal (state, signal_deadline_at) COMMENT 'sweeper: WAITING_SIGNAL steps past their timeout'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='the steps of each run, one row per step of its version, written at the start of the run';

CREATE TABLE workflow_step_tasks (
  run_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'run of the step',
  step_key VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'step that created the task',
  item_index INT UNSIGNED NOT NULL COMMENT 'for_each element index; 0 for a step without for_each',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace of the run',
  application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'application of the run',
  task_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'the task (tasks.id), created in the same transaction',
  created_at DATETIME(3) NOT NULL COMMENT 'creation time (database clock)',
  PRIMARY KEY (run_id, step_key, item_index) COMMENT 'at most one task per (run, step, index): exactly-once advancement; a step''s tasks in element order',
  UNIQUE KEY uq_workflow_step_tasks_task (task_id) COMMENT 'a task belongs to at most one step element'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='the tasks of each started task step, one row per (run, step, element)';

CREATE TABLE workflow_signals (
  run_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'run the signal was sent to',
  name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'signal name (a signal step of the run''s version waits for it)',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace of the run',
  application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'application of the run',
  payload MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL COMMENT 'JSON payload (<= 64 KiB, which TEXT cannot hold with multi-byte escapes; null when omitted)',
  state ENUM('KEPT','CONSUMED') CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'KEPT: sent before its step was reached, consumed when it starts; CONSUMED: its step succeeded with it',
  step_key VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'the signal step that waits for this name',
  sent_at DATETIME(3) NOT NULL COMMENT 'time the signal was accepted (database clock)',
  consumed_at DATETIME(3) NULL COMMENT 'time its step consumed it',
  PRIMARY KEY (run_id, name) COMMENT 'one signal per name and run: a second one is 409 STATE_CONFLICT'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='signals sent to runs, kept until their step starts';

ALTER TABLE tasks
  ADD COLUMN workflow_run_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'run whose step created the task; NULL for other tasks (no index: see workflow_step_tasks)',
  ADD COLUMN workflow_step VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'key of that step',
  ADD COLUMN workflow_index INT UNSIGNED NULL COMMENT 'for_each element index; NULL for a step without for_each (and other tasks)';
