-- The claim reads WAITING tasks of one queue by priority (high first) then age. With an ascending
-- priority column the mixed-direction ORDER BY needs a filesort of every waiting row of the queue;
-- a descending priority column lets the index deliver rows in claim order and stop at LIMIT
-- (MariaDB >= 10.8, MySQL >= 8.0; older servers accept the syntax and sort, which is slower but
-- correct).
ALTER TABLE tasks
  DROP INDEX ix_tasks_claim,
  ADD INDEX ix_tasks_claim (queue_id, state, priority DESC, seq) COMMENT 'claim: WAITING tasks of a queue by priority (high first) then age';
