// One TypeBox schema per HTTP request body of docs/workflows.md, compiled once (`compiled()` of
// http-schemas.ts), shared by the facade and the SDK's HTTP client. Every object is strict
// (additionalProperties: false). The schemas check shapes and bounds; the rules that span fields or
// steps (unique keys, known parents, no cycle, exactly one of task or signal, for_each and run_if
// placement, use_run_key with concurrency_key, delay below deadline, params size) are the server's
// version validation, which names the offending steps (server/workflows/validate.ts).
import { Type, type Static } from '@sinclair/typebox';
import { RetireBody, ScheduleTaskInput } from './http-schemas.js';
import {
  MAX_WORKFLOW_STEPS,
  REASON_MAX,
  SIGNAL_NAME_MAX,
  SIGNAL_TIMEOUT_SECONDS_MAX,
  STEP_DELAY_SECONDS_MAX,
  STEP_KEY_MAX,
  VERSION_NUMBER_MAX,
} from './limits.js';
import { ResourceName, Text, Uint64 } from './primitives.js';

/** A step key: 1–64 of [a-z0-9._-], unique in its version. */
export const STEP_KEY_PATTERN = `^[a-z0-9._-]{1,${STEP_KEY_MAX}}$`;
export const StepKey = Type.String({ pattern: STEP_KEY_PATTERN });
/** A signal name: 1–64 of [a-z0-9._-], unique in its version. */
export const SIGNAL_NAME_PATTERN = `^[a-z0-9._-]{1,${SIGNAL_NAME_MAX}}$`;
export const SignalName = Type.String({ pattern: SIGNAL_NAME_PATTERN });

export const RUN_IF_VALUES = ['all_succeeded', 'any_failed', 'always'] as const;
export type RunIf = (typeof RUN_IF_VALUES)[number];

/** A task step's task: POST /v1/tasks without `payload` and `not_before` (the payload is built per
 * task from the run: input, params, parents, item), plus `params` and `use_run_key`. */
const { payload: _payload, ...stepTaskFields } = ScheduleTaskInput.properties;
export const WorkflowStepTaskInput = Type.Object(
  {
    ...stepTaskFields,
    params: Type.Optional(Type.Unknown()),
    use_run_key: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type WorkflowStepTaskInput = Static<typeof WorkflowStepTaskInput>;

export const WorkflowSignalInput = Type.Object(
  {
    name: SignalName,
    timeout_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: SIGNAL_TIMEOUT_SECONDS_MAX })),
  },
  { additionalProperties: false },
);
export type WorkflowSignalInput = Static<typeof WorkflowSignalInput>;

/** One step as published. `after` may list at most every other step; duplicates, unknown keys and
 * cycles are the validation's 400s (it names them), not schema failures. */
export const WorkflowStepInput = Type.Object(
  {
    key: StepKey,
    after: Type.Optional(Type.Array(StepKey, { maxItems: MAX_WORKFLOW_STEPS })),
    task: Type.Optional(WorkflowStepTaskInput),
    signal: Type.Optional(WorkflowSignalInput),
    for_each: Type.Optional(StepKey),
    run_if: Type.Optional(Type.Union(RUN_IF_VALUES.map((v) => Type.Literal(v)))),
    delay_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: STEP_DELAY_SECONDS_MAX })),
  },
  { additionalProperties: false },
);
export type WorkflowStepInput = Static<typeof WorkflowStepInput>;

/** A version as published: 1–50 steps. The validation checks the count too (a caller that skips the
 * schema still gets the named 400); the schema's bound keeps a huge array from being walked. */
export const WorkflowVersionInput = Type.Object(
  { steps: Type.Array(WorkflowStepInput, { minItems: 1, maxItems: MAX_WORKFLOW_STEPS }) },
  { additionalProperties: false },
);
export type WorkflowVersionInput = Static<typeof WorkflowVersionInput>;

/** POST /v1/workflows */
export const CreateWorkflowBody = Type.Object({ name: ResourceName, version: WorkflowVersionInput }, { additionalProperties: false });
export type CreateWorkflowBody = Static<typeof CreateWorkflowBody>;

/** POST /v1/workflows/{id}/versions */
export const PublishWorkflowVersionBody = Type.Object({ expected_revision: Uint64, version: WorkflowVersionInput }, { additionalProperties: false });
export type PublishWorkflowVersionBody = Static<typeof PublishWorkflowVersionBody>;

/** POST /v1/workflows/{id}:retire — the retire body of queues and subscriptions. */
export const RetireWorkflowBody = RetireBody;
export type RetireWorkflowBody = Static<typeof RetireWorkflowBody>;

/** POST /v1/workflows/{id}/runs. `input` defaults to null (≤ 256 KiB, checked by the server like a
 * payload); `version` names a published version (the current one when omitted: a different
 * command for idempotency, see docs/workflows.md); `concurrency_key` has the rules of submit. */
export const StartWorkflowRunBody = Type.Object(
  {
    input: Type.Optional(Type.Unknown()),
    version: Type.Optional(Type.Integer({ minimum: 1, maximum: VERSION_NUMBER_MAX })),
    concurrency_key: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type StartWorkflowRunBody = Static<typeof StartWorkflowRunBody>;

/** POST /v1/workflow-runs/{id}:pause and :resume take an empty object. */
export const PauseWorkflowRunBody = Type.Object({}, { additionalProperties: false });
export type PauseWorkflowRunBody = Static<typeof PauseWorkflowRunBody>;
export const ResumeWorkflowRunBody = PauseWorkflowRunBody;
export type ResumeWorkflowRunBody = PauseWorkflowRunBody;

/** POST /v1/workflow-runs/{id}:cancel. `reason` is optional as in a task's :cancel. */
export const CancelWorkflowRunBody = Type.Object({ reason: Type.Optional(Text({ minLength: 1, maxLength: REASON_MAX })) }, { additionalProperties: false });
export type CancelWorkflowRunBody = Static<typeof CancelWorkflowRunBody>;

/** POST /v1/workflow-runs/{id}/signals. `payload` defaults to null (≤ 64 KiB, checked by the server). */
export const SendSignalBody = Type.Object({ name: SignalName, payload: Type.Optional(Type.Unknown()) }, { additionalProperties: false });
export type SendSignalBody = Static<typeof SendSignalBody>;

// A step's task in NEEDS_REVIEW is resolved through the task's own `:resolve` (ResolveTaskBody of
// http-schemas.ts): workflows add no resolve body.
