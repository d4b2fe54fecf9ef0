// The workflows API as the console reads it, typed by the server's own response shapes. A server
// without /v1/workflows answers 404: the pages say so instead of failing.
import type { Workflow, WorkflowRun, WorkflowRunSummary, WorkflowVersion } from '../../../../protocol/workflow-views.js';
import { enc, get, withQuery } from '../api.js';
import type { SessionInfo } from '../session.js';

export type { Workflow, WorkflowRun, WorkflowRunSummary, WorkflowVersion };

/** Why definition commands (publish) are disabled, or undefined. */
export function manageWhy(session: SessionInfo): string | undefined {
  return session.scopes.has('workflows:manage') ? undefined : 'needs the workflows:manage scope';
}
/** Why run commands (start, pause, resume, cancel, signal) are disabled, or undefined. */
export function runWhy(session: SessionInfo): string | undefined {
  return session.scopes.has('workflows:run') ? undefined : 'needs the workflows:run scope';
}

export const FINAL_RUN_STATES = ['SUCCEEDED', 'FAILED', 'CANCELLED'];

export function listWorkflows(cursor?: string) {
  return get<{ workflows: Workflow[]; next_cursor: string | null }>(withQuery('/v1/workflows', { limit: '100', cursor }));
}

export function listRuns(q: { workflow_id?: string; state?: string; cursor?: string }) {
  return get<{ runs: WorkflowRunSummary[]; next_cursor: string | null }>(withQuery('/v1/workflow-runs', { ...q, limit: '50' }));
}

export function getWorkflow(id: string) {
  return get<{ workflow: Workflow }>(`/v1/workflows/${enc(id)}`);
}

export function getVersion(id: string, n: number) {
  return get<{ version: WorkflowVersion }>(`/v1/workflows/${enc(id)}/versions/${n}`);
}

/** The graph's edges come from the pinned version. */
export async function loadRun(id: string): Promise<{ run: WorkflowRun; workflow: Workflow | null; version: WorkflowVersion | null }> {
  const { run } = await get<{ run: WorkflowRun }>(`/v1/workflow-runs/${enc(id)}`);
  const none = () => null;
  const [workflow, version] = await Promise.all([
    getWorkflow(run.workflow_id).then((w) => w.workflow, none),
    getVersion(run.workflow_id, run.version).then((v) => v.version, none),
  ]);
  return { run, workflow, version };
}
