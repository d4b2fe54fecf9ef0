// One TypeBox schema per WebSocket frame (both directions), compiled once, strict (unknown fields
// rejected), shared by the gateway and the worker SDK. See docs/worker-protocol.md.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import {
  AGENT_MAX,
  ERROR_CODE_MAX,
  ERROR_MESSAGE_MAX,
  HANDLER_MAX,
  MAX_BACKOFF_MS,
  MAX_CAPACITY,
  MAX_HANDLER_VERSIONS,
  MAX_HELLO_HANDLERS,
  MAX_HELLO_QUEUES,
  MAX_IDS_PER_FRAME,
  MAX_JSON_DEPTH,
  PRIORITY_MAX,
  STEP_KEY_MAX,
  VERSION_MAX,
  WORKER_ID_MAX,
} from './limits.js';
import { Id, IdField, Name, schemaErrorMessage, TaskCallFields, Text, Timestamp, tooDeep, Uint64 } from './primitives.js';
import { LIVE_ATTEMPT_STATES, TASK_STATES } from './states.js';

export const SUBPROTOCOL = 'orbit.worker.v1';
/** Kept here for the SDK's imports; defined in limits.ts. */
export { DEFAULT_MAX_FRAME_BYTES } from './limits.js';
export { TASK_STATES } from './states.js';

const strict = { additionalProperties: false } as const;

// ---- worker → gateway -------------------------------------------------------------------------

export const HelloFrame = Type.Object(
  {
    type: Type.Literal('hello'),
    protocol: Type.Literal(1),
    worker_id: Name(WORKER_ID_MAX),
    queues: Type.Array(IdField, { minItems: 1, maxItems: MAX_HELLO_QUEUES }),
    capacity: Type.Integer({ minimum: 0, maximum: MAX_CAPACITY }),
    concurrency_keys: Type.Optional(Type.Boolean()),
    handlers: Type.Optional(
      Type.Array(
        Type.Object({ handler: Name(HANDLER_MAX), versions: Type.Array(Name(VERSION_MAX), { minItems: 1, maxItems: MAX_HANDLER_VERSIONS }) }, strict),
        { minItems: 1, maxItems: MAX_HELLO_HANDLERS },
      ),
    ),
    resume: Type.Optional(Type.Array(IdField, { maxItems: MAX_IDS_PER_FRAME })),
    agent: Type.Optional(Text({ minLength: 1, maxLength: AGENT_MAX })),
  },
  strict,
);
export type HelloFrame = Static<typeof HelloFrame>;

export const StartFrame = Type.Object({ type: Type.Literal('start'), attempt_id: IdField }, strict);
export type StartFrame = Static<typeof StartFrame>;

export const RenewFrame = Type.Object({ type: Type.Literal('renew'), attempt_ids: Type.Array(IdField, { minItems: 1, maxItems: MAX_IDS_PER_FRAME }) }, strict);
export type RenewFrame = Static<typeof RenewFrame>;

export const ResultError = Type.Object({ code: Text({ minLength: 1, maxLength: ERROR_CODE_MAX }), message: Text({ maxLength: ERROR_MESSAGE_MAX }) }, strict);

export const ResultFrame = Type.Object(
  {
    type: Type.Literal('result'),
    attempt_id: IdField,
    outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('retry'), Type.Literal('unknown')]),
    output: Type.Optional(Type.Unknown()),
    error: Type.Optional(ResultError),
    retry_after_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_BACKOFF_MS })),
  },
  strict,
);
export type ResultFrame = Static<typeof ResultFrame>;

export const CapacityFrame = Type.Object({ type: Type.Literal('capacity'), capacity: Type.Integer({ minimum: 0, maximum: MAX_CAPACITY }) }, strict);
export type CapacityFrame = Static<typeof CapacityFrame>;

export const DrainFrame = Type.Object({ type: Type.Literal('drain') }, strict);
export type DrainFrame = Static<typeof DrainFrame>;

export const WORKER_FRAMES = {
  hello: HelloFrame,
  start: StartFrame,
  renew: RenewFrame,
  result: ResultFrame,
  capacity: CapacityFrame,
  drain: DrainFrame,
} as const;
export type WorkerFrame = HelloFrame | StartFrame | RenewFrame | ResultFrame | CapacityFrame | DrainFrame;

// ---- gateway → worker -------------------------------------------------------------------------

export const ResumedAttempt = Type.Object(
  {
    attempt_id: Id,
    state: Type.Union(LIVE_ATTEMPT_STATES.map((s) => Type.Literal(s))),
    lease_expires_at: Timestamp,
    concurrency_token: Type.Optional(Uint64),
  },
  strict,
);

export const HelloOkFrame = Type.Object(
  {
    type: Type.Literal('hello.ok'),
    session_id: Id,
    worker_id: Name(WORKER_ID_MAX),
    lease_ms: Type.Integer({ minimum: 0 }),
    renew_ms: Type.Integer({ minimum: 0 }),
    max_frame_bytes: Type.Integer({ minimum: 1 }),
    resumed: Type.Array(ResumedAttempt),
    lost: Type.Array(Type.String()),
  },
  strict,
);
export type HelloOkFrame = Static<typeof HelloOkFrame>;

/** `workflow` of an assigned step task; omitted on other tasks. */
export const TaskWorkflowRefSchema = Type.Object(
  { run_id: Id, step: Type.String({ minLength: 1, maxLength: STEP_KEY_MAX }), index: Type.Optional(Type.Integer({ minimum: 0 })) },
  strict,
);

export const AssignedTask = Type.Object(
  {
    id: Id,
    queue_id: Id,
    ...TaskCallFields,
    priority: Type.Integer({ minimum: 0, maximum: PRIORITY_MAX }),
    deadline_at: Timestamp,
    /** A workflow step's task (docs/workflows.md): its run, step and, for a for_each element, index. */
    workflow: Type.Optional(TaskWorkflowRefSchema),
  },
  strict,
);
export type AssignedTask = Static<typeof AssignedTask>;

export const TaskAssignFrame = Type.Object(
  {
    type: Type.Literal('task.assign'),
    attempt_id: Id,
    attempt_no: Type.Integer({ minimum: 1 }),
    lease_expires_at: Timestamp,
    // Deliberately a plain string here: the SDK reports a malformed token as its own protocol
    // error (docs/worker-protocol.md, SDK obligations) instead of a schema failure.
    concurrency_token: Type.Optional(Type.String()),
    task: AssignedTask,
  },
  strict,
);
export type TaskAssignFrame = Static<typeof TaskAssignFrame>;

export const StartOkFrame = Type.Object({ type: Type.Literal('start.ok'), attempt_id: Id, lease_expires_at: Timestamp }, strict);
export type StartOkFrame = Static<typeof StartOkFrame>;

export const RenewOkFrame = Type.Object(
  {
    type: Type.Literal('renew.ok'),
    leases: Type.Array(Type.Object({ attempt_id: Id, lease_expires_at: Timestamp }, strict)),
    lost: Type.Array(Type.String()),
  },
  strict,
);
export type RenewOkFrame = Static<typeof RenewOkFrame>;

export const ResultOkFrame = Type.Object(
  {
    type: Type.Literal('result.ok'),
    attempt_id: Id,
    deduplicated: Type.Boolean(),
    task_state: Type.Union(TASK_STATES.map((s) => Type.Literal(s))),
  },
  strict,
);
export type ResultOkFrame = Static<typeof ResultOkFrame>;

export const TaskCancelFrame = Type.Object(
  {
    type: Type.Literal('task.cancel'),
    attempt_id: Id,
    reason: Type.Union([Type.Literal('CANCELLED'), Type.Literal('LEASE_EXPIRED'), Type.Literal('DEADLINE_EXCEEDED')]),
  },
  strict,
);
export type TaskCancelFrame = Static<typeof TaskCancelFrame>;

export const ErrorFrame = Type.Object(
  {
    type: Type.Literal('error'),
    code: Type.String(),
    message: Type.String(),
    attempt_id: Type.Optional(Type.String()),
    fatal: Type.Boolean(),
  },
  strict,
);
export type ErrorFrame = Static<typeof ErrorFrame>;

export const DrainOkFrame = Type.Object({ type: Type.Literal('drain.ok') }, strict);
export type DrainOkFrame = Static<typeof DrainOkFrame>;

export const GoawayFrame = Type.Object({ type: Type.Literal('goaway'), reason: Type.String() }, strict);
export type GoawayFrame = Static<typeof GoawayFrame>;

export const GATEWAY_FRAMES = {
  'hello.ok': HelloOkFrame,
  'task.assign': TaskAssignFrame,
  'start.ok': StartOkFrame,
  'renew.ok': RenewOkFrame,
  'result.ok': ResultOkFrame,
  'task.cancel': TaskCancelFrame,
  error: ErrorFrame,
  'drain.ok': DrainOkFrame,
  goaway: GoawayFrame,
} as const;
export type GatewayFrame =
  HelloOkFrame | TaskAssignFrame | StartOkFrame | RenewOkFrame | ResultOkFrame | TaskCancelFrame | ErrorFrame | DrainOkFrame | GoawayFrame;

// ---- parsing ----------------------------------------------------------------------------------

type FrameTable = Record<string, TSchema>;

function compileTable<T extends FrameTable>(table: T) {
  const out = new Map<string, ReturnType<typeof TypeCompiler.Compile>>();
  for (const [k, s] of Object.entries(table)) out.set(k, TypeCompiler.Compile(s));
  return out;
}

const workerChecks = compileTable(WORKER_FRAMES);
const gatewayChecks = compileTable(GATEWAY_FRAMES);

export type ParseResult<F> = { ok: true; frame: F } | { ok: false; message: string };

function parseWith<F>(checks: Map<string, ReturnType<typeof TypeCompiler.Compile>>, text: string): ParseResult<F> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { ok: false, message: 'frame is not valid JSON' };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return { ok: false, message: 'frame must be a JSON object' };
  const type = (v as { type?: unknown }).type;
  if (typeof type !== 'string') return { ok: false, message: 'frame has no string "type"' };
  const check = checks.get(type);
  if (!check) return { ok: false, message: `unknown frame type ${JSON.stringify(type).slice(0, 80)}` };
  if (!check.Check(v)) {
    const e = check.Errors(v).First();
    return { ok: false, message: `${type}: ${e ? `${e.path || '/'} ${schemaErrorMessage(e)}` : 'invalid'}` };
  }
  return { ok: true, frame: v as F };
}

/** Deepest object/array nesting a worker frame may have (the frame itself is level 1): the same
 * bound as for HTTP bodies (limits.ts MAX_JSON_DEPTH). */
export const MAX_FRAME_DEPTH = MAX_JSON_DEPTH;

/** Parses and validates a worker → gateway text frame. */
export function parseWorkerFrame(text: string): ParseResult<WorkerFrame> {
  const r = parseWith<WorkerFrame>(workerChecks, text);
  if (r.ok && tooDeep(r.frame)) return { ok: false, message: `frame is nested deeper than ${MAX_FRAME_DEPTH} levels` };
  return r;
}

/** Parses and validates a gateway → worker text frame (used by the SDK). */
export function parseGatewayFrame(text: string): ParseResult<GatewayFrame> {
  return parseWith<GatewayFrame>(gatewayChecks, text);
}
