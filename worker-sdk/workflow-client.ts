// The HTTP client's workflow methods (docs/workflows.md "Endpoints"): definitions (create, publish,
// retire, reads) and runs (start, pause, resume, cancel, signal, reads). Spread into createClient
// (http-client.ts), which gives them its request function; wire names as in the spec.
import type { CancelWorkflowRunBody, CreateWorkflowBody, SendSignalBody, StartWorkflowRunBody, WorkflowVersionInput } from '@orbit/protocol/workflow-schemas';
import type {
  Workflow,
  WorkflowList,
  WorkflowReceipt,
  WorkflowRun,
  WorkflowRunList,
  WorkflowRunReceipt,
  WorkflowVersion,
  WorkflowVersionList,
  WorkflowVersionReceipt,
} from '@orbit/protocol/workflow-views';
import type { WorkflowRunState } from '@orbit/protocol/states';

/** What the client passes in: a read and a receipt-bearing command (Idempotency-Key required). */
export interface WorkflowTransport {
  get: <T>(path: string, query?: Record<string, unknown>) => Promise<T>;
  cmd: <T>(path: string, body: unknown, c: { idempotencyKey: string; signal?: AbortSignal }) => Promise<T>;
}

type Cmd = { idempotencyKey: string; signal?: AbortSignal };
type Rev = string | bigint;

export interface ListWorkflowRunsQuery {
  workflow_id?: string;
  state?: WorkflowRunState;
  limit?: number;
  cursor?: string;
}

export function workflowMethods(t: WorkflowTransport) {
  const seg = (id: string) => encodeURIComponent(id);
  const rev = (r: Rev) => (typeof r === 'bigint' ? r.toString() : r);
  const run = (id: string, action: string) => `/v1/workflow-runs/${seg(id)}${action}`;
  return {
    // ---- definitions ----
    /** 201 {workflow, version}; a replay answers the frozen receipt with `deduplicated: true`. */
    createWorkflow: (body: CreateWorkflowBody, c: Cmd) => t.cmd<WorkflowVersionReceipt>('/v1/workflows', body, c),
    /** Publishes version n+1: runs started later use it, running runs keep theirs. */
    publishWorkflowVersion: (id: string, body: { expected_revision: Rev; version: WorkflowVersionInput }, c: Cmd) =>
      t.cmd<WorkflowVersionReceipt>(`/v1/workflows/${seg(id)}/versions`, { expected_revision: rev(body.expected_revision), version: body.version }, c),
    /** Irreversible; refused with RESOURCE_BUSY (details.blockers[0].run_ids) while a run is RUNNING or PAUSED. */
    retireWorkflow: (id: string, body: { expected_revision: Rev; reason: string }, c: Cmd) =>
      t.cmd<WorkflowReceipt>(`/v1/workflows/${seg(id)}:retire`, { expected_revision: rev(body.expected_revision), reason: body.reason }, c),
    listWorkflows: (query: { limit?: number; cursor?: string } = {}) => t.get<WorkflowList>('/v1/workflows', { ...query }),
    getWorkflow: (id: string) => t.get<{ workflow: Workflow }>(`/v1/workflows/${seg(id)}`).then((d) => d.workflow),
    /** Every version, oldest first. */
    listWorkflowVersions: (id: string) => t.get<WorkflowVersionList>(`/v1/workflows/${seg(id)}/versions`).then((d) => d.versions),
    getWorkflowVersion: (id: string, n: number) => t.get<{ version: WorkflowVersion }>(`/v1/workflows/${seg(id)}/versions/${n}`).then((d) => d.version),

    // ---- runs ----
    /** 201 {run}: the current version unless `version` names a published one; the root steps start
     * in the same transaction. Without `version` the receipt freezes the version current then. */
    startWorkflowRun: (workflowId: string, body: StartWorkflowRunBody, c: Cmd) => t.cmd<WorkflowRunReceipt>(`/v1/workflows/${seg(workflowId)}/runs`, body, c),
    /** No new step tasks while paused (steps that may start become READY); created tasks go on. */
    pauseWorkflowRun: (id: string, c: Cmd) => t.cmd<WorkflowRunReceipt>(run(id, ':pause'), {}, c),
    /** Creates the READY steps' tasks in its transaction. */
    resumeWorkflowRun: (id: string, c: Cmd) => t.cmd<WorkflowRunReceipt>(run(id, ':resume'), {}, c),
    /** Run CANCELLED; its WAITING/LEASED tasks cancelled, RUNNING ones finish and are recorded. */
    cancelWorkflowRun: (id: string, body: CancelWorkflowRunBody, c: Cmd) => t.cmd<WorkflowRunReceipt>(run(id, ':cancel'), body, c),
    /** A signal sent before its step is reached is kept; a second one of a name is 409 STATE_CONFLICT. */
    signalWorkflowRun: (id: string, body: SendSignalBody, c: Cmd) => t.cmd<WorkflowRunReceipt>(run(id, '/signals'), body, c),
    /** Runs without `steps` and `input`, newest first. */
    listWorkflowRuns: (query: ListWorkflowRunsQuery = {}) => t.get<WorkflowRunList>('/v1/workflow-runs', { ...query }),
    getWorkflowRun: (id: string) => t.get<{ run: WorkflowRun }>(run(id, '')).then((d) => d.run),
  };
}
