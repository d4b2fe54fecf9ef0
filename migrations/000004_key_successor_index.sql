-- A key hand-off (server/dispatch/handoff.ts) reads the next due WAITING tasks of one key in one
-- queue, by priority (high first) then age, LIMIT 3. With the old (namespace_id, concurrency_key,
-- state) index that read visited and sorted every waiting task of the key — a hot key with a
-- backlog of 10 000 paid 10 000 rows per turnover; with the queue, the priority (descending) and
-- the age in the index it stops after a few rows. The old index is its prefix, so it goes.
ALTER TABLE tasks
  DROP INDEX ix_tasks_ns_key,
  ADD INDEX ix_tasks_ns_key (namespace_id, concurrency_key, state, queue_id, priority DESC, seq) COMMENT 'listing by key; keyed waiting checks; key hand-off: next WAITING task of a key in a queue by priority then age';
