// The workflow definition commands, each inside its receipt-bearing command transaction.
// Lock order: namespace row (create) → workflow row FOR UPDATE (a run start takes it shared) → the
// version's queue rows shared. Queue retirement takes a queue row exclusively and then reads the
// unfinished runs naming it, so a publish or run start and a queue retirement never both succeed.
import { OrbitError } from '@orbit/protocol/errors';
import { MAX_BUSY_RUN_IDS, MAX_WORKFLOWS_PER_NAMESPACE } from '@orbit/protocol/limits';
import type { WorkflowStep } from '@orbit/protocol/workflow-views';
import type { Credential } from '../db/credentials.js';
import type { Conn, Tx } from '../db/pool.js';
import { dbNow } from '../db/time.js';
import { lockNamespace } from '../db/tenants.js';
import { auditCommand, createDefinition, revisionConflict } from '../admin/definitions.js';
import { getVersion, insertVersion, insertVersionQueues, lockVersionQueues, workflowVersionView } from '../db/workflow-versions.js';
import {
  getWorkflow,
  insertWorkflow,
  markWorkflowRetired,
  setCurrentWorkflowVersion,
  unfinishedRunsOfWorkflow,
  workflowView,
  type WorkflowRow,
} from '../db/workflows.js';

/** Steps normalized with their queues' defaults: what the command fingerprints. */
export interface VersionToStore {
  steps: WorkflowStep[];
  queueIds: string[];
}

/** The body path of the first step naming the queue, for a refusal's field. */
export function queueField(steps: readonly { task?: { queue_id: string } }[], queueId: string): string {
  const i = steps.findIndex((s) => s.task?.queue_id === queueId);
  return `version.steps.${i}.task.queue_id`;
}

/** Existence and authorization were checked before the transaction; this re-checks under lock. */
async function lockNamedQueues(c: Tx, namespaceId: string, v: VersionToStore): Promise<void> {
  const rows = await lockVersionQueues(c, namespaceId, v.queueIds);
  const found = new Map(rows.map((r) => [r.id, r]));
  for (const q of v.queueIds) {
    const row = found.get(q);
    if (!row) throw new OrbitError('NOT_FOUND', 'queue not found', { field: queueField(v.steps, q) });
    if (row.retired_at) {
      throw new OrbitError('RESOURCE_RETIRED', `the version names a retired queue (${q})`, { field: queueField(v.steps, q), queue_id: q });
    }
  }
}

async function lockForCommand(c: Tx, cred: Credential, id: string, expectedRevision: string): Promise<WorkflowRow> {
  const w = await getWorkflow(c, cred.namespaceId, id, 'update');
  if (!w) throw new OrbitError('NOT_FOUND', 'workflow not found');
  if (w.retired_at) throw new OrbitError('RESOURCE_RETIRED', 'workflow is retired');
  if (String(w.revision) !== expectedRevision) throw revisionConflict(expectedRevision, String(w.revision));
  return w;
}

async function publish(c: Conn, cred: Credential, workflowId: string, number: number, v: VersionToStore, now: string): Promise<void> {
  const stored = {
    ...v,
    workflowId,
    number,
    namespaceId: cred.namespaceId,
    applicationId: cred.applicationId,
    createdAt: now,
    createdBy: cred.id,
  };
  await insertVersion(c, stored);
  await insertVersionQueues(c, stored);
}

async function views(c: Conn, cred: Credential, id: string, number?: number) {
  const w = (await getWorkflow(c, cred.namespaceId, id))!;
  const out: Record<string, unknown> = { workflow: workflowView(w) };
  if (number !== undefined) out.version = workflowVersionView((await getVersion(c, id, number))!);
  return { data: out, resourceId: id };
}

export async function createWorkflow(c: Tx, cred: Credential, b: { name: string; version: VersionToStore }) {
  await lockNamespace(c, cred.namespaceId);
  await lockNamedQueues(c, cred.namespaceId, b.version);
  const id = await createDefinition(c, cred, {
    kind: 'workflow',
    name: b.name,
    limit: MAX_WORKFLOWS_PER_NAMESPACE,
    insert: (id, now) => insertWorkflow(c, { id, namespace_id: cred.namespaceId, application_id: cred.applicationId, name: b.name }, now),
    publishFirst: (id, now) => publish(c, cred, id, 1, b.version, now),
  });
  return views(c, cred, id, 1);
}

export async function publishWorkflowVersion(c: Tx, cred: Credential, id: string, b: { expected_revision: string; version: VersionToStore }) {
  const w = await lockForCommand(c, cred, id, b.expected_revision);
  await lockNamedQueues(c, cred.namespaceId, b.version);
  const now = await dbNow(c);
  const number = Number(w.current_version) + 1;
  await publish(c, cred, id, number, b.version, now);
  await setCurrentWorkflowVersion(c, id, number, now);
  await auditCommand(c, cred, 'workflow', 'publish', id, { number });
  return views(c, cred, id, number);
}

/** Irreversible; refused while a run is RUNNING or PAUSED. */
export async function retireWorkflow(c: Tx, cred: Credential, id: string, b: { expected_revision: string; reason: string }) {
  await lockForCommand(c, cred, id, b.expected_revision);
  const runs = await unfinishedRunsOfWorkflow(c, id, MAX_BUSY_RUN_IDS);
  if (runs.count > 0) {
    const more = runs.count > runs.ids.length ? ', …' : '';
    throw new OrbitError(
      'RESOURCE_BUSY',
      `workflow cannot be retired: ${runs.count} unfinished runs (RUNNING or PAUSED; cancel them or let them finish: ${runs.ids.join(', ')}${more})`,
      { reasons: ['workflow_runs'], blockers: [{ reason: 'workflow_runs', count: runs.count, run_ids: runs.ids }] },
    );
  }
  await markWorkflowRetired(c, id, b.reason);
  await auditCommand(c, cred, 'workflow', 'retire', id, b);
  return views(c, cred, id);
}
