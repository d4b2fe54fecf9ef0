-- Every column that stores a value a client or worker sends holds the largest valid one (issue 18).
-- Sizes are bytes of UTF-8 as the server serializes the value (JSON.stringify): the spec's 256 KiB
-- payload and output, MAX_HELLO_HANDLERS x MAX_HANDLER_VERSIONS names of a hello (about 1.1 MB),
-- ERROR_MESSAGE_MAX = 4096 code points (16 KiB as UTF-8, 24 KiB as escaped JSON). TEXT holds
-- 65 535 bytes, MEDIUMTEXT 16 MiB - 1.
--
-- Widened here (each overflowed with a valid value, "Data too long" -> INTERNAL):
--   result_events.result      the event's result object: output (<= 256 KiB) + error; a 70 KiB
--                             output made every result of its task fail and the task end in review
--   worker_sessions.handlers  a hello's handler filter (256 handlers x 64 versions of 64 characters)
--   credentials.queue_ids     a credential's queue list (orbit-admin takes any number of queues)
--   audit_log.details         credential.create records that queue list too
--
-- Audited and already large enough (no change): tasks.payload, tasks.result_output, attempts.output,
-- receipts.response_data (one command's response, one task at most: batches keep one receipt per
-- item), schedule_versions.task (MEDIUMTEXT each); tasks.result_error_message and
-- attempts.error_message (TEXT, 16 KiB needed); attempts.result_reply (the result.ok frame, < 200
-- bytes, no output); worker_sessions.queue_ids (64 ids); schedule_versions.calendar (cron and zone).
-- Deliveries store no content: a lease reads the event row.
ALTER TABLE result_events
  MODIFY result MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL COMMENT 'result object JSON: outcome, output (<= 256 KiB serialized) and error';

ALTER TABLE worker_sessions
  MODIFY handlers MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL COMMENT 'JSON handler filter from hello (up to 256 handlers x 64 versions), NULL = any';

ALTER TABLE credentials
  MODIFY queue_ids MEDIUMTEXT CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'JSON array of allowed queue ids (any number); NULL = every queue of the namespace (*)';

ALTER TABLE audit_log
  MODIFY details MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL COMMENT 'JSON details, never secrets (a credential''s queue list included)';
