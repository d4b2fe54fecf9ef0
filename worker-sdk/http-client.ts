// Client for the HTTP facade (docs/http-api.md). Bodies, queries and responses use the wire names
// (snake_case) so what you read in the spec is what you write here. uint64 values (revisions,
// tokens, sequences, cursors) stay decimal strings. Every command takes an explicit
// Idempotency-Key: the caller owns the identity of a command (a retry must reuse it), so the
// client never invents one.
import type {
  CancelTaskBody,
  CreateQueueBody,
  CreateScheduleBody,
  ResolveTaskBody,
  ScheduleVersionInput,
  SubmitBatchItem,
  SubmitTaskBody,
} from '@orbit/protocol/http-schemas';
import { isErrorCode, type ErrorCode } from '@orbit/protocol/errors';
import { IDEMPOTENCY_KEY_RE } from '@orbit/protocol/primitives';
import { OrbitApiError } from './errors.js';
import { workflowMethods } from './workflow-client.js';

export interface ClientOptions {
  url: string;
  token: string;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
  /** Extra headers on every request (e.g. tracing). */
  headers?: Record<string, string>;
}

export interface CommandOptions {
  idempotencyKey: string;
  signal?: AbortSignal;
}

import type {
  Task,
  Attempt,
  Queue,
  Subscription,
  Delivery,
  DeliveryRecord,
  BatchSubmitResult,
  Schedule,
  ScheduleVersion,
  ScheduleFire,
} from '@orbit/protocol/http-views';

export type Revision = string | bigint;
export interface ListTasksQuery {
  queue_id?: string;
  state?: string;
  concurrency_key?: string;
  business_key?: string;
  limit?: number;
  cursor?: string;
}
export interface CreateSubscriptionBody {
  name: string;
  queue_id: string;
  event_types: string[];
}

export type OrbitClient = ReturnType<typeof createClient>;

export function createClient(opts: ClientOptions) {
  const base = opts.url.replace(/\/+$/, '');
  const doFetch = opts.fetch ?? globalThis.fetch;
  const seg = (id: string) => encodeURIComponent(id);
  const rev = (r: Revision) => (typeof r === 'bigint' ? r.toString() : r);

  async function call<T>(
    method: 'GET' | 'POST',
    path: string,
    o: { body?: unknown; key?: string; query?: Record<string, unknown>; signal?: AbortSignal } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { ...opts.headers, authorization: `Bearer ${opts.token}`, accept: 'application/json' };
    if (o.key !== undefined) {
      if (typeof o.key !== 'string' || !IDEMPOTENCY_KEY_RE.test(o.key)) {
        throw new OrbitApiError('INVALID_ARGUMENT', 'idempotencyKey must be 1-255 visible ASCII characters', {
          status: 0,
          details: { field: 'Idempotency-Key' },
        });
      }
      headers['idempotency-key'] = o.key;
    }
    let url = base + path;
    if (o.query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(o.query)) if (v !== undefined && v !== null) q.set(k, String(v));
      const s = q.toString();
      if (s) url += `?${s}`;
    }
    let text: string | undefined;
    if (o.body !== undefined) {
      text = JSON.stringify(o.body);
      headers['content-type'] = 'application/json; charset=utf-8';
    }
    let res: Response;
    try {
      res = await doFetch(url, { method, headers, body: text, signal: o.signal });
    } catch (err) {
      // Transport failure: the command may or may not have been accepted. Retrying with the same
      // Idempotency-Key is safe, hence UNAVAILABLE.
      throw new OrbitApiError('UNAVAILABLE', `request failed: ${(err as Error).message}`, { status: 0, cause: err });
    }
    const raw = await res.text();
    const requestId = res.headers.get('x-request-id') ?? undefined;
    let env: { request_id?: string; data?: unknown; error?: { code?: unknown; message?: unknown; details?: Record<string, unknown> } } | undefined;
    try {
      env = JSON.parse(raw);
    } catch {
      env = undefined;
    }
    if (res.ok && env && 'data' in env) return env.data as T;
    if (env?.error && isErrorCode(env.error.code)) {
      throw new OrbitApiError(env.error.code, typeof env.error.message === 'string' ? env.error.message : env.error.code, {
        status: res.status,
        requestId: env.request_id ?? requestId,
        details: env.error.details,
      });
    }
    // Not an envelope (a proxy page, a truncated body): classify by status.
    const code: ErrorCode =
      res.status === 401
        ? 'UNAUTHENTICATED'
        : res.status === 403
          ? 'PERMISSION_DENIED'
          : res.status === 404
            ? 'NOT_FOUND'
            : res.status === 405
              ? 'METHOD_NOT_ALLOWED'
              : res.status === 413
                ? 'PAYLOAD_TOO_LARGE'
                : res.status === 429
                  ? 'QUOTA_EXCEEDED'
                  : [502, 503, 504].includes(res.status)
                    ? 'UNAVAILABLE'
                    : res.status >= 500
                      ? 'INTERNAL'
                      : 'INVALID_ARGUMENT';
    throw new OrbitApiError(code, `unexpected HTTP ${res.status} response: ${raw.slice(0, 200)}`, { status: res.status, requestId });
  }

  // async so a missing key is a rejected promise like every other error, not a synchronous throw
  const cmd = async <T>(path: string, body: unknown, c: CommandOptions) => call<T>('POST', path, { body, key: requireKey(c), signal: c.signal });

  return {
    // ---- tasks ----
    submitTask: (body: SubmitTaskBody, c: CommandOptions) => cmd<{ task: Task; deduplicated: boolean }>('/v1/tasks', body, c),
    /** POST /v1/tasks:batch: 1-500 items, each with its own `idempotency_key` (each item is its
     * own command: not atomic). Resolves with one result per item, in order — a refused item is a
     * slot with `error`, not a rejection; the promise rejects only when the whole request fails. */
    submitTasks: (items: SubmitBatchItem[], o: { signal?: AbortSignal } = {}) =>
      call<{ results: BatchSubmitResult[] }>('POST', '/v1/tasks:batch', { body: { tasks: items }, signal: o.signal }).then((d) => d.results),
    getTask: (id: string) => call<{ task: Task }>('GET', `/v1/tasks/${seg(id)}`).then((d) => d.task),
    listTasks: (query: ListTasksQuery = {}) => call<{ tasks: Task[]; next_cursor: string | null }>('GET', '/v1/tasks', { query: { ...query } }),
    getTaskAttempts: (id: string) => call<{ attempts: Attempt[] }>('GET', `/v1/tasks/${seg(id)}/attempts`).then((d) => d.attempts),
    getAttempt: (id: string) => call<{ attempt: Attempt }>('GET', `/v1/attempts/${seg(id)}`).then((d) => d.attempt),
    cancelTask: (id: string, body: CancelTaskBody, c: CommandOptions) => cmd<{ task: Task; deduplicated: boolean }>(`/v1/tasks/${seg(id)}:cancel`, body, c),
    resolveTask: (id: string, body: ResolveTaskBody, c: CommandOptions) => cmd<{ task: Task; deduplicated: boolean }>(`/v1/tasks/${seg(id)}:resolve`, body, c),

    // ---- queues ----
    createQueue: (body: CreateQueueBody, c: CommandOptions) => cmd<{ queue: Queue; deduplicated: boolean }>('/v1/queues', body, c),
    getQueue: (id: string) => call<{ queue: Queue }>('GET', `/v1/queues/${seg(id)}`).then((d) => d.queue),
    listQueues: () => call<{ queues: Queue[] }>('GET', '/v1/queues').then((d) => d.queues),
    pauseQueue: (id: string, body: { expected_revision: Revision }, c: CommandOptions) =>
      cmd<{ queue: Queue; deduplicated: boolean }>(`/v1/queues/${seg(id)}:pause`, { expected_revision: rev(body.expected_revision) }, c),
    resumeQueue: (id: string, body: { expected_revision: Revision }, c: CommandOptions) =>
      cmd<{ queue: Queue; deduplicated: boolean }>(`/v1/queues/${seg(id)}:resume`, { expected_revision: rev(body.expected_revision) }, c),
    retireQueue: (id: string, body: { expected_revision: Revision; reason: string }, c: CommandOptions) =>
      cmd<{ queue: Queue; deduplicated: boolean }>(`/v1/queues/${seg(id)}:retire`, { expected_revision: rev(body.expected_revision), reason: body.reason }, c),

    // ---- subscriptions and deliveries ----
    createSubscription: (body: CreateSubscriptionBody, c: CommandOptions) =>
      cmd<{ subscription: Subscription; deduplicated: boolean }>('/v1/subscriptions', body, c),
    getSubscription: (id: string) => call<{ subscription: Subscription }>('GET', `/v1/subscriptions/${seg(id)}`).then((d) => d.subscription),
    listSubscriptions: () => call<{ subscriptions: Subscription[] }>('GET', '/v1/subscriptions').then((d) => d.subscriptions),
    listDeliveries: (id: string, query: { state?: string; limit?: number; cursor?: string } = {}) =>
      call<{ deliveries: DeliveryRecord[]; next_cursor: string | null }>('GET', `/v1/subscriptions/${seg(id)}/deliveries`, { query: { ...query } }),
    /** Not a receipt-bearing command: no Idempotency-Key (docs/http-api.md). */
    leaseDeliveries: (id: string, body: { max: number; lease_seconds: number }) =>
      call<{ deliveries: Delivery[] }>('POST', `/v1/subscriptions/${seg(id)}/deliveries:lease`, { body }).then((d) => d.deliveries),
    /** Idempotent by itself: acking twice is harmless. Returns how many deliveries this call
     * acknowledged (0 for ones already ACKED, unknown, or never leased). */
    ackDeliveries: (id: string, deliveryIds: string[]) =>
      call<{ acked: number }>('POST', `/v1/subscriptions/${seg(id)}/deliveries:ack`, { body: { delivery_ids: deliveryIds } }).then((d) => d.acked),
    pauseSubscription: (id: string, body: { expected_revision: Revision }, c: CommandOptions) =>
      cmd<{ subscription: Subscription; deduplicated: boolean }>(`/v1/subscriptions/${seg(id)}:pause`, { expected_revision: rev(body.expected_revision) }, c),
    resumeSubscription: (id: string, body: { expected_revision: Revision }, c: CommandOptions) =>
      cmd<{ subscription: Subscription; deduplicated: boolean }>(`/v1/subscriptions/${seg(id)}:resume`, { expected_revision: rev(body.expected_revision) }, c),
    retireSubscription: (id: string, body: { expected_revision: Revision; reason: string }, c: CommandOptions) =>
      cmd<{ subscription: Subscription; deduplicated: boolean }>(
        `/v1/subscriptions/${seg(id)}:retire`,
        { expected_revision: rev(body.expected_revision), reason: body.reason },
        c,
      ),

    // ---- schedules (docs/schedules.md) ----
    /** 201 {schedule, version}; a replay answers the frozen receipt with `deduplicated: true`. */
    createSchedule: (body: CreateScheduleBody, c: CommandOptions) =>
      cmd<{ schedule: Schedule; version: ScheduleVersion; deduplicated: boolean }>('/v1/schedules', body, c),
    /** Publishes version n+1 (fires after the commit use it). */
    publishScheduleVersion: (id: string, body: { expected_revision: Revision; version: ScheduleVersionInput }, c: CommandOptions) =>
      cmd<{ schedule: Schedule; version: ScheduleVersion; deduplicated: boolean }>(
        `/v1/schedules/${seg(id)}/versions`,
        { expected_revision: rev(body.expected_revision), version: body.version },
        c,
      ),
    pauseSchedule: (id: string, body: { expected_revision: Revision }, c: CommandOptions) =>
      cmd<{ schedule: Schedule; deduplicated: boolean }>(`/v1/schedules/${seg(id)}:pause`, { expected_revision: rev(body.expected_revision) }, c),
    /** Resumes from now: the paused period is never caught up. */
    resumeSchedule: (id: string, body: { expected_revision: Revision }, c: CommandOptions) =>
      cmd<{ schedule: Schedule; deduplicated: boolean }>(`/v1/schedules/${seg(id)}:resume`, { expected_revision: rev(body.expected_revision) }, c),
    /** One task now from the current version (paused or not); the idempotencyKey dedupes it. */
    triggerSchedule: (id: string, body: { scheduled_for?: string }, c: CommandOptions) =>
      cmd<{ task: Task; deduplicated: boolean }>(`/v1/schedules/${seg(id)}:trigger`, body, c),
    /** Only a paused schedule; irreversible. */
    retireSchedule: (id: string, body: { expected_revision: Revision; reason: string }, c: CommandOptions) =>
      cmd<{ schedule: Schedule; deduplicated: boolean }>(
        `/v1/schedules/${seg(id)}:retire`,
        { expected_revision: rev(body.expected_revision), reason: body.reason },
        c,
      ),
    getSchedule: (id: string) => call<{ schedule: Schedule }>('GET', `/v1/schedules/${seg(id)}`).then((d) => d.schedule),
    listSchedules: (query: { limit?: number; cursor?: string } = {}) =>
      call<{ schedules: Schedule[]; next_cursor: string | null }>('GET', '/v1/schedules', { query: { ...query } }),
    listScheduleVersions: (id: string) => call<{ versions: ScheduleVersion[] }>('GET', `/v1/schedules/${seg(id)}/versions`).then((d) => d.versions),
    getScheduleVersion: (id: string, n: number) => call<{ version: ScheduleVersion }>('GET', `/v1/schedules/${seg(id)}/versions/${n}`).then((d) => d.version),
    /** Fire history, newest first. */
    listScheduleFires: (id: string, query: { limit?: number; cursor?: string } = {}) =>
      call<{ fires: ScheduleFire[]; next_cursor: string | null }>('GET', `/v1/schedules/${seg(id)}/fires`, { query: { ...query } }),

    // ---- workflows (docs/workflows.md) ----
    ...workflowMethods({ get: (path, query) => call('GET', path, { query }), cmd }),
  };
}

function requireKey(c: CommandOptions | undefined): string {
  if (!c || typeof c.idempotencyKey !== 'string') {
    throw new OrbitApiError('INVALID_ARGUMENT', 'an explicit idempotencyKey is required for every command', {
      status: 0,
      details: { field: 'Idempotency-Key' },
    });
  }
  return c.idempotencyKey;
}
