-- Claim reads bounded on hot keys with a backlog (issue 19; docs/benchmarks.md "Hot keys with a
-- backlog"). The claim round's candidate read walked every waiting row of a busy key before its
-- LIMIT (the busy-key filter is checked row by row): rows read per claim grew with the backlog.
--
-- A group is (namespace, concurrency key, queue, handler, handler version): rows of one group are
-- eligible for the same sessions at the same times, except for not_before. `claimable` is 1 for
-- every unkeyed row, every row with a not_before, and every keyed row without not_before that is
-- (or once was) the first of its group in claim order (priority DESC, seq) among the group's rows
-- without not_before. A later row of a group is never claimed before that first row (same
-- handler, same version, due now): the candidate read scans only claimable rows
-- (ix_waiting_claimable) and returns the same first row of each free key as before. Invariant:
-- the first not_before-NULL row of each group is flagged; a flag is never cleared (a row inserted
-- ahead of a flagged one leaves it flagged: more rows read, never fewer claims). Written under the
-- key's resource_keys row lock (server/db/waiting-tasks.ts, docs/design.md "Waiting heads").
--
-- Default 1: a writer that does not set the flag over-flags (safe: only costs rows read). The
-- backfill clears the flag of every row that is not the first of its group.
ALTER TABLE waiting_tasks
  ADD COLUMN claimable TINYINT(1) NOT NULL DEFAULT 1 COMMENT '1: the candidate read scans this row (unkeyed, not_before set, or the first of its group in claim order without not_before; never cleared); 0: a later row of its group',
  ADD INDEX ix_waiting_claimable (queue_id, claimable, priority DESC, seq) COMMENT 'claim and refill candidate read: the claimable rows of a queue in claim order';

UPDATE waiting_tasks w
  JOIN (SELECT queue_id, priority, seq,
               ROW_NUMBER() OVER (PARTITION BY namespace_id, concurrency_key, queue_id, handler, handler_version ORDER BY priority DESC, seq) AS n
          FROM waiting_tasks WHERE concurrency_key IS NOT NULL AND not_before IS NULL) g
    ON g.queue_id = w.queue_id AND g.priority = w.priority AND g.seq = w.seq
   SET w.claimable = 0
 WHERE g.n > 1;
