// The JSON shapes of HTTP responses (docs/http-api.md), shared by the facade (which builds them) and
// the SDK's HTTP client (which returns them). Types only: no I/O, nothing to validate at runtime.
// uint64 values (revisions, tokens, sequences) are decimal strings; times are RFC 3339 UTC.
import type { RetryPolicy } from './http-schemas.js';
import type { AttemptState, DeliveryState, TaskState } from './states.js';
import type { TaskWorkflowRef } from './workflow-views.js';

export interface TaskResult {
  outcome: 'succeeded' | 'failed' | 'unknown' | 'cancelled' | 'deadline_exceeded';
  output?: unknown;
  error?: { code: string; message: string } | null;
}

export interface Task {
  id: string;
  namespace_id: string;
  queue_id: string;
  handler: string;
  handler_version: string;
  payload_version: string;
  payload?: unknown;
  business_key?: string;
  concurrency_key?: string;
  priority: number;
  state: TaskState;
  attempts_made: number;
  max_attempts: number;
  not_before: string | null;
  deadline_at: string;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  result: TaskResult | null;
  /** Present exactly on tasks a schedule created (a fire or a trigger). */
  schedule_id?: string;
  schedule_version?: number;
  scheduled_for?: string;
  /** Present exactly on a workflow step's task (docs/workflows.md). */
  workflow?: TaskWorkflowRef;
}

export interface Attempt {
  id: string;
  task_id: string;
  attempt_no: number;
  state: AttemptState;
  worker_id: string;
  session_id: string;
  /** Decimal string; present exactly when the task has a concurrency_key. */
  concurrency_token?: string;
  leased_at: string;
  started_at: string | null;
  lease_expires_at: string;
  finished_at: string | null;
  outcome: string | null;
  error: { code: string; message: string } | null;
}

export interface Queue {
  id: string;
  namespace_id: string;
  name: string;
  revision: string;
  paused: boolean;
  max_active_attempts: number;
  lease_seconds: number;
  retry: Required<RetryPolicy>;
  active_attempts: number;
  created_at: string;
  updated_at: string;
  retired_at?: string;
}

export interface Subscription {
  id: string;
  name: string;
  queue_id: string;
  event_types: string[];
  enabled: boolean;
  paused: boolean;
  cursor: string;
  pending_count: number;
  revision: string;
  created_at: string;
  retired_at?: string;
  retired_sequence?: string;
}

export interface ResultEvent {
  sequence: string;
  type: string;
  task_id: string;
  queue_id: string;
  occurred_at: string;
  result: TaskResult;
}

/** A delivery handed out by leaseDeliveries (state LEASED). */
export interface Delivery {
  id: string;
  sequence: string;
  state: Extract<DeliveryState, 'LEASED'>;
  attempts: number;
  lease_expires_at: string;
  event: ResultEvent;
}

/** A delivery as listed by listDeliveries (history): state as observed now (a LEASED delivery past
 * its lease reads EXPIRED); `event` is null once the event was pruned. */
export interface DeliveryRecord {
  id: string;
  sequence: string;
  state: DeliveryState;
  attempts: number;
  lease_expires_at: string | null;
  acked_at: string | null;
  created_at: string;
  event: ResultEvent | null;
}

/** One slot of the POST /v1/tasks:batch response, in item order. */
export type BatchSubmitResult =
  | { status: 200 | 201; data: { task: Task; deduplicated: boolean } }
  | { status: number; error: { code: string; message: string; details?: Record<string, unknown> } };

/** One minute of outcomes of a queue (GET /v1/queues/{id}/stats): tasks that reached each
 * terminal state during the minute starting at `minute` (database clock). */
export interface MinuteBucket {
  minute: string;
  succeeded: number;
  failed: number;
  cancelled: number;
  deadline_exceeded: number;
}

/** GET /v1/queues/{id}/stats → `{"stats": QueueStats}`. `minutes` has exactly 15 buckets, oldest
 * first, the current minute last. */
export interface QueueStats {
  waiting: number;
  leased: number;
  running: number;
  needs_review: number;
  active_attempts: number;
  max_active_attempts: number;
  oldest_waiting_at: string | null;
  minutes: MinuteBucket[];
}

/** A connected worker session (GET /v1/workers → `{"workers": WorkerSession[]}`). */
export interface WorkerSession {
  worker_id: string;
  session_id: string;
  node_id: string;
  queues: string[];
  capacity: number;
  in_flight: number;
  /** The identity's frozen capability flag: it may receive tasks with a concurrency_key. */
  concurrency_keys: boolean;
  draining: boolean;
  connected_at: string;
  last_seen_at: string;
}

// ---- schedules (docs/schedules.md) ----

export type ScheduleCalendar = { cron: string; timezone: string } | { every_seconds: number };

/** The task template of a version: the fields of POST /v1/tasks with their defaults applied
 * (max_attempts resolved from the queue at publication), without not_before. */
export interface ScheduleTaskTemplate {
  queue_id: string;
  handler: string;
  handler_version: string;
  payload_version: string;
  payload: unknown;
  business_key?: string;
  concurrency_key?: string;
  priority: number;
  max_attempts: number;
  deadline_seconds: number;
}

export interface Schedule {
  id: string;
  namespace_id: string;
  name: string;
  revision: string;
  paused: boolean;
  current_version: number;
  /** null while paused, retired, or after the current version's ends_at. */
  next_fire_at: string | null;
  last_fire_at: string | null;
  created_at: string;
  updated_at: string;
  /** Omitted when not retired. */
  retired_at?: string;
}

/** A published version; never changed after publication. */
export interface ScheduleVersion {
  number: number;
  created_at: string;
  calendar: ScheduleCalendar;
  task: ScheduleTaskTemplate;
  overlap: 'allow' | 'skip';
  catchup: 'none' | 'latest' | 'all';
  catchup_limit: number;
  starts_at: string | null;
  ends_at: string | null;
}

export type FireOutcome = 'created' | 'skipped_overlap' | 'skipped_catchup' | 'failed_quota';

/** One fire time of a schedule (GET /v1/schedules/{id}/fires, newest first). */
export interface ScheduleFire {
  scheduled_for: string;
  fired_at: string;
  version: number;
  outcome: FireOutcome;
  /** The created task (outcome created). */
  task_id?: string;
}
