// Workflow run commands and reads. Every body is validated completely before the command
// transaction starts, so bad input changes nothing. A run start without `version` and one naming
// the current version are different commands: the input fingerprinted is the body as given.
import { OrbitError } from '@orbit/protocol/errors';
import { isWorkflowRunState, WORKFLOW_RUN_STATES } from '@orbit/protocol/states';
import { CancelWorkflowRunBody, PauseWorkflowRunBody, ResumeWorkflowRunBody, SendSignalBody, StartWorkflowRunBody } from '@orbit/protocol/workflow-schemas';
import { isId } from '@orbit/protocol/ids';
import { getWorkflow } from '../db/workflows.js';
import { getRun, listRuns, runSummaryView, type RunRow } from '../db/workflow-runs.js';
import { normalizeRunStart, normalizeSignal, runKeyProblem } from '../workflows/validate.js';
import { signalStepOf } from '../workflows/advance.js';
import { findVersionGraph, runView, versionGraph, type VersionGraph } from '../workflows/run-state.js';
import { cancelRun, pauseRun, resumeRun, sendSignal, startRun, type RunEffect } from '../workflows/run-commands.js';
import { canUseQueue } from '../admin/access.js';
import { READ_SCOPES, requireVersionAccess } from './routes-workflows.js';
import { command, commandsOn, type CommandReply, scopedRoute } from './command.js';
import type { RequestCtx } from './context.js';
import { listQuery, noQuery } from './list-query.js';
import { notOneOf } from './hints.js';

async function loadRun(ctx: RequestCtx): Promise<{ row: RunRow; version: VersionGraph }> {
  const row = await getRun(ctx.app.pool, ctx.cred.namespaceId, ctx.params.id!);
  if (!row) throw new OrbitError('NOT_FOUND', 'workflow run not found');
  const version = await versionGraph(ctx.app.pool, row.workflow_id, Number(row.version));
  requireVersionAccess(ctx.cred, version.queueIds);
  return { row, version };
}

const reply = (r: RunEffect): CommandReply => ({ data: { run: r.run }, resourceId: r.run.id });

function afterCommit(r: RunEffect, ctx: RequestCtx): void {
  ctx.app.signals.revoked(r.revoked);
  if (r.queues.length > 0) ctx.app.signals.wake(r.queues);
}

export const startRunRoute = command({
  operation: 'POST /v1/workflows/{id}/runs',
  scope: 'workflows:run',
  body: StartWorkflowRunBody,
  status: 201,
  load: async (ctx, b) => {
    const n = normalizeRunStart(b);
    const wf = await getWorkflow(ctx.app.pool, ctx.cred.namespaceId, ctx.params.id!);
    if (!wf) throw new OrbitError('NOT_FOUND', 'workflow not found');
    const number = n.version ?? Number(wf.current_version);
    const version = await findVersionGraph(ctx.app.pool, wf.id, number);
    if (!version) throw new OrbitError('NOT_FOUND', `workflow version ${number} not found`, { field: 'version' });
    requireVersionAccess(ctx.cred, version.queueIds);
    const keyProblem = runKeyProblem(version.steps, n.concurrency_key);
    if (keyProblem) throw keyProblem;
    // Retirement (of the workflow or of a queue) is decided in the transaction, under its locks.
    return n;
  },
  effect: (c, n, { cred, params }) => startRun(c, cred, params.id!, n),
  reply,
  afterCommit,
});

const onRun = commandsOn({ path: '/v1/workflow-runs', scope: 'workflows:run', load: loadRun, reply });
export const pauseRunRoute = onRun('pause', PauseWorkflowRunBody, (c, _b, { cred, params }) => pauseRun(c, cred.namespaceId, params.id!), afterCommit);
export const resumeRunRoute = onRun('resume', ResumeWorkflowRunBody, (c, _b, { cred, params }) => resumeRun(c, cred.namespaceId, params.id!), afterCommit);
export const cancelRunRoute = onRun(
  'cancel',
  CancelWorkflowRunBody,
  (c, b, { cred, params }) => cancelRun(c, cred.namespaceId, params.id!, b.reason),
  afterCommit,
);

export const sendSignalRoute = command({
  operation: 'POST /v1/workflow-runs/{id}/signals',
  scope: 'workflows:run',
  body: SendSignalBody,
  load: async (ctx, b) => {
    const n = normalizeSignal(b);
    const { version } = await loadRun(ctx);
    if (signalStepOf(version.graph, n.name) === undefined) {
      throw new OrbitError('INVALID_ARGUMENT', `name: no step of the run's version waits for signal ${n.name}`, { field: 'name' });
    }
    return n;
  },
  effect: (c, n, { cred, params }) => sendSignal(c, cred.namespaceId, params.id!, n),
  reply,
  afterCommit,
});

export const getRunRoute = scopedRoute(READ_SCOPES, async (ctx) => {
  noQuery(ctx);
  const { row } = await loadRun(ctx);
  return { run: await runView(ctx.app.pool, row) };
});

/** A credential limited to some queues sees the runs whose version names only queues it may use. */
export const listRunsRoute = scopedRoute(READ_SCOPES, async (ctx) => {
  const q = listQuery(ctx, new Set(['workflow_id', 'state', 'limit', 'cursor']), 'r');
  const workflowId = q.one('workflow_id');
  const state = q.one('state');
  if (workflowId !== undefined && !isId(workflowId))
    throw new OrbitError('INVALID_ARGUMENT', 'workflow_id: must be a 32-hex workflow id', { field: 'workflow_id' });
  if (state !== undefined && !isWorkflowRunState(state)) throw notOneOf('state', state, WORKFLOW_RUN_STATES);
  const rows = await listRuns(ctx.app.pool, {
    namespaceId: ctx.cred.namespaceId,
    workflowId,
    state: state as RunRow['state'] | undefined,
    beforeSeq: q.after,
    limit: q.limit,
  });
  const { page, next_cursor } = q.pageOf(rows, (r) => r.seq);
  const cred = ctx.cred;
  const visible: RunRow[] = [];
  for (const r of page) {
    if (cred.queueIds === '*' || (await versionGraph(ctx.app.pool, r.workflow_id, Number(r.version))).queueIds.every((id) => canUseQueue(cred, id)))
      visible.push(r);
  }
  return { runs: visible.map(runSummaryView), next_cursor };
});
