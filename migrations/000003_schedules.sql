-- Schedules (../shared/spec/schedules.md): a schedule creates tasks on a calendar from a published,
-- immutable version. Forward-only, no foreign keys; every row carries its namespace and
-- application so that every transaction (a fire included) touches one application's rows only.
--
-- Exactly once per fire time: a fire inserts its schedule_fires row (primary key
-- (schedule_id, scheduled_for)), creates its task and advances schedules.next_fire_at in one
-- transaction that holds the schedule row lock.

CREATE TABLE schedules (
  id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'schedule id (32 hex)',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'owning namespace',
  application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'application of the namespace (fires run in its transactions and count against its quota)',
  name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'name, unique in the namespace forever (never reused after retirement)',
  revision BIGINT UNSIGNED NOT NULL DEFAULT 1 COMMENT 'bumped by every change: publish, pause, resume, retire',
  paused TINYINT(1) NOT NULL DEFAULT 0 COMMENT '1 = does not fire (trigger still works); a paused period is never caught up',
  current_version INT UNSIGNED NOT NULL COMMENT 'number of the version fires use (the newest published)',
  queue_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'queue of the current version (queue retirement checks enabled schedules by it)',
  next_fire_at DATETIME(3) NULL COMMENT 'next fire time not yet fired; NULL while paused, retired or past ends_at',
  last_fire_at DATETIME(3) NULL COMMENT 'scheduled_for of the newest fire record',
  last_task_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'newest task created by a fire or a trigger (overlap=skip looks at it)',
  catchup_remaining INT UNSIGNED NULL COMMENT 'NULL = not catching up; else tasks the running catch-up may still create (catchup=all), kept across its chunks',
  created_at DATETIME(3) NOT NULL COMMENT 'creation time (UTC, database clock)',
  updated_at DATETIME(3) NOT NULL COMMENT 'last change',
  retired_at DATETIME(3) NULL COMMENT 'set once when retired; never cleared',
  retire_reason VARCHAR(512) NULL COMMENT 'reason given at retirement',
  PRIMARY KEY (id),
  UNIQUE KEY uq_schedules_ns_name (namespace_id, name),
  KEY ix_schedules_due (next_fire_at) COMMENT 'firing loop: schedules whose next fire is due (non-locking read)',
  KEY ix_schedules_queue (queue_id, paused, retired_at) COMMENT 'queue retirement: enabled schedules targeting a queue'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='calendars that create tasks from a published immutable version';

CREATE TABLE schedule_versions (
  schedule_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'schedule the version belongs to',
  number INT UNSIGNED NOT NULL COMMENT '1-based version number; never changed after publication',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace of the schedule',
  application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'application of the schedule',
  calendar TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL COMMENT 'JSON: {"cron","timezone"} or {"every_seconds"}',
  task MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL COMMENT 'JSON: the normalized task template (POST /v1/tasks fields with defaults, no not_before)',
  queue_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'task.queue_id, for queries',
  overlap ENUM('allow','skip') CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'skip = record a fire as skipped_overlap while the previous task is unfinished',
  catchup ENUM('none','latest','all') CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'what happens to fire times missed while no gateway ran',
  catchup_limit INT UNSIGNED NOT NULL COMMENT 'catchup=all: most tasks one catch-up creates (1-1000)',
  starts_at DATETIME(3) NULL COMMENT 'no fire before; anchor of every_seconds when set',
  ends_at DATETIME(3) NULL COMMENT 'no fire after',
  anchor_at DATETIME(3) NOT NULL COMMENT 'every_seconds: fires at anchor + k*period, k >= 1 (starts_at, else the publication time)',
  created_at DATETIME(3) NOT NULL COMMENT 'publication time (database clock)',
  created_by CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'credential that published it',
  PRIMARY KEY (schedule_id, number)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='published, immutable versions of schedules';

CREATE TABLE schedule_fires (
  schedule_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'schedule that fired',
  scheduled_for DATETIME(3) NOT NULL COMMENT 'the fire time on the calendar; with schedule_id the identity of a fire (exactly one record each)',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace of the schedule',
  application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'application of the schedule',
  version INT UNSIGNED NOT NULL COMMENT 'version the fire used',
  fired_at DATETIME(3) NOT NULL COMMENT 'commit time of the fire (database clock)',
  outcome ENUM('created','skipped_overlap','skipped_catchup','failed_quota') CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'what the fire did',
  task_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'task created (outcome created)',
  PRIMARY KEY (schedule_id, scheduled_for)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='fire history of schedules; the primary key makes each fire time fire once';

ALTER TABLE tasks
  ADD COLUMN schedule_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'schedule that created the task (fire or trigger); NULL for submitted tasks',
  ADD COLUMN schedule_version INT UNSIGNED NULL COMMENT 'version of that schedule the task was created from',
  ADD COLUMN scheduled_for DATETIME(3) NULL COMMENT 'fire time the task was created for';
