// Every numeric limit of the wire contract, in one place: the TypeBox schemas (frames.ts,
// http-schemas.ts), the server's checks beyond the schemas, the generated API documents and the SDK
// all read them from here, so a limit cannot drift between the gateway and its clients. Pure
// constants (no imports): the console bundles this file too. The spec states each value
// (docs/http-api.md, docs/worker-protocol.md, docs/schedules.md).

// ---- sizes (bytes) ------------------------------------------------------------------------------

/** Largest worker frame the gateway accepts by default (ORBIT_MAX_FRAME_BYTES; announced in hello.ok). */
export const DEFAULT_MAX_FRAME_BYTES = 1024 * 1024;
/** Largest HTTP body by default (ORBIT_MAX_BODY_BYTES). A 256 KiB payload fits with room for escapes. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/** Largest POST /v1/tasks:batch body by default (ORBIT_MAX_BATCH_BODY_BYTES). */
export const DEFAULT_MAX_BATCH_BODY_BYTES = 16 * 1024 * 1024;
/** A task's `payload`, serialized as JSON: exactly this many bytes is accepted, more is 413. */
export const MAX_PAYLOAD_BYTES = 256 * 1024;
/** A result frame's `output`, serialized as JSON (docs/worker-protocol.md `result`). */
export const MAX_OUTPUT_BYTES = 256 * 1024;
/** Deepest object/array nesting of an HTTP body or a worker frame (the value itself is level 1):
 * deeper values overflow the stack of JSON.stringify and of every recursive walk. */
export const MAX_JSON_DEPTH = 512;
/** The largest WebSocket close reason RFC 6455 allows (125-byte control payload minus the 2-byte code). */
export const MAX_CLOSE_REASON_BYTES = 123;

// ---- worker frames ------------------------------------------------------------------------------

/** `capacity` of hello and capacity frames: most attempts a session holds at once. */
export const MAX_CAPACITY = 1024;
/** Attempt ids in one renew frame, and in hello's `resume`. */
export const MAX_IDS_PER_FRAME = 1024;
/** Queues one hello may consume. */
export const MAX_HELLO_QUEUES = 64;
/** Handlers one hello may declare, and versions per handler. */
export const MAX_HELLO_HANDLERS = 256;
export const MAX_HANDLER_VERSIONS = 64;
/** `retry_after_ms` of a result, and a queue's retry backoffs: one day. */
export const MAX_BACKOFF_MS = 86_400_000;

// ---- string lengths -----------------------------------------------------------------------------

/** worker_id, handler_version, payload_version: 1–64 of [A-Za-z0-9._:-]. */
export const WORKER_ID_MAX = 64;
export const VERSION_MAX = 64;
/** handler: 1–128 of [A-Za-z0-9._:-]. */
export const HANDLER_MAX = 128;
/** Queue, subscription and schedule names: 1–64 of [a-z0-9._-]. */
export const RESOURCE_NAME_MAX = 64;
/** An id-valued field accepted as any short string (queue_id of a body, attempt ids of frames);
 * the handler answers a malformed one NOT_FOUND, so the schema only bounds its length. */
export const ID_FIELD_MAX = 64;
/** business_key and concurrency_key, in Unicode code points (columns VARCHAR(191) utf8mb4 and
 * VARBINARY(764) = 191 × 4 bytes). */
export const KEY_MAX_CODE_POINTS = 191;
/** Idempotency-Key header and batch items' idempotency_key: 1–255 visible ASCII characters. */
export const IDEMPOTENCY_KEY_MAX = 255;
/** `reason` of retire, cancel and resolve. */
export const REASON_MAX = 512;
/** A result's error code and message. */
export const ERROR_CODE_MAX = 128;
export const ERROR_MESSAGE_MAX = 4096;
/** hello's `agent` (the SDK's name and version). */
export const AGENT_MAX = 64;
/** Timestamps given as strings (not_before, starts_at, …), before they are parsed. */
export const TIMESTAMP_INPUT_MAX = 40;
/** A schedule's cron expression and IANA time zone name. */
export const CRON_MAX = 255;
export const TIMEZONE_MAX = 64;

// ---- numbers of a task, queue, subscription or schedule -----------------------------------------

export const PRIORITY_MAX = 9;
/** max_attempts of a task or a retry policy. */
export const MAX_ATTEMPTS_MAX = 100;
/** deadline_seconds: at most 30 days; 1 day when omitted. */
export const DEADLINE_SECONDS_MAX = 2_592_000;
export const DEFAULT_DEADLINE_SECONDS = 86_400;
export const RETRY_MULTIPLIER_MAX = 100;
/** A queue's max_active_attempts. */
export const MAX_ACTIVE_ATTEMPTS_MAX = 1_000_000;
/** A queue's lease_seconds. */
export const QUEUE_LEASE_SECONDS_MIN = 5;
export const QUEUE_LEASE_SECONDS_MAX = 3600;
/** What POST /v1/queues (and `orbit-admin bootstrap`) give a queue for an omitted field. */
export const QUEUE_DEFAULTS = {
  max_active_attempts: 1000,
  lease_seconds: 30,
  retry: { max_attempts: 3, initial_backoff_ms: 1000, max_backoff_ms: 60000, multiplier: 2 },
};
/** deliveries:lease `max` and `lease_seconds`; deliveries:ack ids. */
export const DELIVERY_LEASE_MAX = 100;
export const DELIVERY_LEASE_SECONDS_MIN = 5;
export const DELIVERY_LEASE_SECONDS_MAX = 600;
export const ACK_IDS_MAX = 1000;
/** A calendar's every_seconds: at most one year. */
export const EVERY_SECONDS_MAX = 31_536_000;
/** A version's catchup_limit: 100 when omitted. */
export const CATCHUP_LIMIT_MAX = 1000;
export const DEFAULT_CATCHUP_LIMIT = 100;

// ---- requests and quotas ------------------------------------------------------------------------

/** Items of one POST /v1/tasks:batch. */
export const MAX_BATCH_ITEMS = 500;
/** `limit` of list endpoints. */
export const LIST_LIMIT_DEFAULT = 100;
export const LIST_LIMIT_MAX = 500;
/** Non-retired subscriptions per namespace (paused ones count); the next one is 429. */
export const MAX_SUBSCRIPTIONS_PER_NAMESPACE = 64;
/** Non-retired schedules per namespace (paused ones count); the next one is 429. */
export const MAX_SCHEDULES_PER_NAMESPACE = 1000;

// ---- workflows (docs/workflows.md) ------------------------------------------------------------------

/** Steps of one workflow version. */
export const MAX_WORKFLOW_STEPS = 50;
/** A step's `key` and a signal's `name`: 1–64 of [a-z0-9._-] (the resource-name alphabet). */
export const STEP_KEY_MAX = 64;
export const SIGNAL_NAME_MAX = 64;
/** A signal step's `timeout_seconds`: at most 30 days; 1 day when omitted. */
export const SIGNAL_TIMEOUT_SECONDS_MAX = 2_592_000;
export const DEFAULT_SIGNAL_TIMEOUT_SECONDS = 86_400;
/** A task step's `delay_seconds` (0 when omitted; also less than its deadline_seconds). */
export const STEP_DELAY_SECONDS_MAX = 86_400;
/** Elements of the array a `for_each` step expands (0 is allowed); more is FOR_EACH_INVALID. */
export const MAX_FOR_EACH_ELEMENTS = 1000;
/** A task step's `params` and a signal's `payload`, serialized as JSON. */
export const MAX_STEP_PARAMS_BYTES = 64 * 1024;
export const MAX_SIGNAL_PAYLOAD_BYTES = 64 * 1024;
/** A run's `input`, serialized as JSON (a step task's whole payload has MAX_PAYLOAD_BYTES). */
export const MAX_RUN_INPUT_BYTES = 256 * 1024;
/** A version number (INT UNSIGNED columns). */
export const VERSION_NUMBER_MAX = 4_294_967_295;
/** Non-retired workflows per namespace; the next one is 429. */
export const MAX_WORKFLOWS_PER_NAMESPACE = 1000;
/** Run ids a RESOURCE_BUSY refusal (workflow or queue retirement) names at most. */
export const MAX_BUSY_RUN_IDS = 10;

// ---- uint64 -------------------------------------------------------------------------------------

/** Largest uint64 (revisions, sequences and fencing tokens are uint64, sent as decimal strings). */
export const UINT64_MAX = 18446744073709551615n;
/** The last fencing token a resource key can grant (2^64-1): a key at it is exhausted, and claims
 * of its tasks are refused rather than repeat a token. */
export const TOKEN_MAX = UINT64_MAX;
