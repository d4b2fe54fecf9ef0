// The JSON shapes of workflow responses (docs/workflows.md), shared by the facade (which builds them), the
// SDK's HTTP client (which returns them) and the console. Types only: no I/O, nothing to validate
// at run time. Times are RFC 3339 UTC; `revision` is a decimal string.
import type { RunIf } from './workflow-schemas.js';
import type { WorkflowRunState, WorkflowStepState } from './states.js';

/** `{"id","namespace_id","name","revision","current_version","created_at","updated_at","retired_at"?}` */
export interface Workflow {
  id: string;
  namespace_id: string;
  name: string;
  revision: string;
  current_version: number;
  created_at: string;
  updated_at: string;
  /** Omitted when not retired. */
  retired_at?: string;
}

/** A task step's task as stored in its version: the fields of POST /v1/tasks with their defaults
 * (max_attempts resolved from the queue at publication), without payload and not_before, plus
 * params and use_run_key. */
export interface WorkflowStepTask {
  queue_id: string;
  handler: string;
  handler_version: string;
  payload_version: string;
  business_key?: string;
  /** A fixed key (no interpolation); never together with use_run_key. */
  concurrency_key?: string;
  priority: number;
  max_attempts: number;
  deadline_seconds: number;
  params: unknown;
  use_run_key: boolean;
}

export interface WorkflowSignalSpec {
  name: string;
  timeout_seconds: number;
}

/** One step of a published version, defaults applied: `after` is [] on roots, `run_if` is
 * all_succeeded unless given (roots have none), `delay_seconds` is 0 unless given (task steps). */
export interface WorkflowStep {
  key: string;
  after: string[];
  task?: WorkflowStepTask;
  signal?: WorkflowSignalSpec;
  for_each?: string;
  run_if?: RunIf;
  delay_seconds?: number;
}

/** A published version; never changed after publication. */
export interface WorkflowVersion {
  number: number;
  created_at: string;
  steps: WorkflowStep[];
}

export type SkipReason = 'parent_failed' | 'condition';

export interface WorkflowStepError {
  code: string;
  message: string;
}

/** One step of a run (`GET /v1/workflow-runs/{id}`). `task_ids` in element order. */
export interface WorkflowRunStep {
  key: string;
  state: WorkflowStepState;
  task_ids: string[];
  /** SUCCEEDED steps: the task's output, a for_each step's outputs in element order, a signal's payload. */
  output?: unknown;
  /** FAILED steps. */
  error?: WorkflowStepError;
  /** SKIPPED steps. */
  skipped_because?: SkipReason;
  started_at?: string;
  finished_at?: string;
}

/** A run as listed (`GET /v1/workflow-runs`): without `steps` and `input`. */
export interface WorkflowRunSummary {
  id: string;
  workflow_id: string;
  version: number;
  state: WorkflowRunState;
  /** Omitted when the run has none. */
  concurrency_key?: string;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

export interface WorkflowRun extends WorkflowRunSummary {
  input: unknown;
  steps: WorkflowRunStep[];
}

/** The `workflow` field of a step task (task object and task.assign's task); omitted on others.
 * `index` only for a for_each element. */
export interface TaskWorkflowRef {
  run_id: string;
  step: string;
  index?: number;
}

/** The payload of a step task: the run's input, the step's params, the output of each succeeded
 * parent (a signal's payload included) by key, and for a for_each element its item and index. */
export interface WorkflowStepPayload {
  input: unknown;
  params: unknown;
  parents: Record<string, unknown>;
  item?: unknown;
  index?: number;
}

// ---- response bodies (the `data` of the envelope) ----

/** POST /v1/workflows and POST /v1/workflows/{id}/versions (201; a replay 200 with deduplicated). */
export interface WorkflowVersionReceipt {
  workflow: Workflow;
  version: WorkflowVersion;
  deduplicated: boolean;
}
/** POST /v1/workflows/{id}:retire */
export interface WorkflowReceipt {
  workflow: Workflow;
  deduplicated: boolean;
}
/** POST /v1/workflows/{id}/runs (201) and every run command (:pause, :resume, :cancel, signals). */
export interface WorkflowRunReceipt {
  run: WorkflowRun;
  deduplicated: boolean;
}
export interface WorkflowList {
  workflows: Workflow[];
  next_cursor: string | null;
}
export interface WorkflowVersionList {
  versions: WorkflowVersion[];
}
export interface WorkflowRunList {
  runs: WorkflowRunSummary[];
  next_cursor: string | null;
}
