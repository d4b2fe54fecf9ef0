-- Fewer index writes per task (issue 19). Before this migration a task's row changed state three
-- times (WAITING -> LEASED -> RUNNING -> finished) and 4 of the 8 secondary indexes of `tasks`
-- carried `state`, so each change deleted and re-inserted 4 index entries; `attempts` had 3 of
-- its 4 secondary indexes with `state`. About 55 index entries per task were written in these two
-- tables; after it about 28 (docs/design.md, "Index entries per task").
--
-- 1. The claimable work lives in a narrow table, `waiting_tasks`: one row per WAITING task,
--    clustered in claim order (queue, priority high first, age), inserted in the transaction that
--    makes the task WAITING (submit, retry, requeue of an unstarted attempt, resolve as retry) and
--    deleted in the one that makes it leave WAITING (claim, hand-off, refill, cancel, deadline).
--    Claims, refills and key hand-offs read it; the deadline sweep reads its deadline index. Both
--    rows are written only by a transaction that holds the task row's lock (tasks before
--    waiting_tasks in the lock order), so the two always agree at commit.
-- 2. `tasks` keeps its state column, but no secondary index of it changes with the state: the
--    claim, deadline and retirement indexes go (their reads use waiting_tasks, attempts and the
--    review index), the key index becomes a listing index, and the one state its reads still need
--    by queue — NEEDS_REVIEW — is a generated flag, so its index entry changes only when a task
--    enters or leaves review.
-- 3. `attempts`: the session index goes (its one reader, the in-flight count of a session, reads
--    the worker index), and the worker index carries `is_live` instead of `state`, so a start
--    (LEASED -> RUNNING) changes no entry of it.
-- Every index left is named by the query that uses it in its COMMENT; test/schema-indexes.test.ts
-- EXPLAINs those queries.

CREATE TABLE waiting_tasks (
  queue_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'queue of the task',
  priority TINYINT UNSIGNED NOT NULL COMMENT 'copy of tasks.priority (0-9, higher first)',
  seq BIGINT UNSIGNED NOT NULL COMMENT 'copy of tasks.seq (age; unique)',
  task_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'the WAITING task (tasks.id)',
  namespace_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'namespace of the task',
  application_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'application of the task (the sweep runs per application)',
  handler VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'copy of tasks.handler (a session''s handler filter)',
  handler_version VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'copy of tasks.handler_version',
  concurrency_key VARBINARY(764) NULL COMMENT 'copy of tasks.concurrency_key (NULL = unkeyed)',
  not_before DATETIME(3) NULL COMMENT 'copy of tasks.not_before when the task became WAITING (caller-set or retry backoff)',
  deadline_at DATETIME(3) NOT NULL COMMENT 'copy of tasks.deadline_at',
  created_at DATETIME(3) NOT NULL COMMENT 'copy of tasks.created_at (queue depth age, oldest waiting)',
  PRIMARY KEY (queue_id, priority DESC, seq) COMMENT 'claim and refill: a queue''s waiting tasks in claim order, read in place; queue stats and depth',
  KEY ix_waiting_deadline (deadline_at) COMMENT 'sweeper: waiting tasks past their deadline',
  KEY ix_waiting_key (namespace_id, concurrency_key, queue_id, priority DESC, seq) COMMENT 'key hand-off: next waiting task of a key in a queue by priority then age; keyed waiting gauge'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='the claimable work: one row per WAITING task, written with the task''s state change';

INSERT INTO waiting_tasks (queue_id, priority, seq, task_id, namespace_id, application_id, handler, handler_version, concurrency_key, not_before, deadline_at, created_at)
  SELECT queue_id, priority, seq, id, namespace_id, application_id, handler, handler_version, concurrency_key, not_before, deadline_at, created_at
    FROM tasks WHERE state = 'WAITING';

ALTER TABLE tasks
  ADD COLUMN in_review TINYINT(1) AS (state = 'NEEDS_REVIEW') STORED COMMENT '1 while NEEDS_REVIEW (generated): its index entry changes only on entering or leaving review',
  DROP INDEX ix_tasks_claim,
  DROP INDEX ix_tasks_deadline,
  DROP INDEX ix_tasks_queue_unfinished,
  DROP INDEX ix_tasks_ns_key,
  ADD INDEX ix_tasks_ns_key (namespace_id, concurrency_key, seq) COMMENT 'listing by key, newest first',
  ADD INDEX ix_tasks_review (queue_id, in_review, seq) COMMENT 'queue stats and retirement: the NEEDS_REVIEW tasks of a queue, oldest first';

ALTER TABLE attempts
  ADD COLUMN is_live TINYINT(1) AS (state IN ('LEASED', 'RUNNING')) STORED COMMENT '1 while LEASED or RUNNING (generated): unchanged by a start',
  DROP INDEX ix_attempts_worker,
  DROP INDEX ix_attempts_session,
  ADD INDEX ix_attempts_worker (namespace_id, worker_id, is_live) COMMENT 'hello: resume and release of a worker''s live attempts; a session''s in-flight count';
