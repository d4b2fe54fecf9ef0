// Helpers of the workflow run tests: a version's steps in a few words, the endpoints by raw HTTP,
// a raw WebSocket worker loop that answers every step task by a rule, and SQL reads of the run.
import type { RowDataPacket } from 'mysql2/promise';
import { afterEach, expect } from 'vitest';
import { call, ikey, type RawResponse } from './http.js';
import { expectData } from './contract.js';
import { closeWorkers, connect, createQueue, nextOf, result, start, type Fixture } from './dispatch-fixture.js';
import { useGatewayFixture } from './fixture.js';
import { newWorkflow as newDefinition, type Api } from './workflows.js';
import type { Queue } from '@orbit/protocol/http-views';
import type { RawWorker } from './raw-worker.js';
import { waitFor } from './wait.js';
import { workflowViolations } from './workflow-invariants.js';
import type { WorkflowRun } from '@orbit/protocol/workflow-views';

export type { Api };

/** The workflow run suites' per-file set-up: useGatewayFixture, `api()` for the file's gateway and
 * tenant, and the raw workers a test opened closed after it. */
export function useWorkflowRunFixture(): { f: Fixture; api: () => Api } {
  const f = useGatewayFixture();
  afterEach(() => closeWorkers(f));
  return { f, api: () => ({ url: f.gw.url, token: f.t.token }) };
}

/** A task step on `queueId` (handler wf.step, v1, max_attempts 1 unless given). */
export function taskStep(key: string, queueId: string, over: Record<string, unknown> = {}, task: Record<string, unknown> = {}): Record<string, unknown> {
  return { key, task: { queue_id: queueId, handler: 'wf.step', handler_version: 'v1', payload_version: 'v1', max_attempts: 1, ...task }, ...over };
}

/** A queue, a workflow of two task steps a → b on it, a run of it started and a raw worker on the
 * queue (a's task is assigned to it next). */
export async function startChainRun(f: Fixture, api: Api): Promise<{ q: Queue; run: any; w: RawWorker; workerId: string }> {
  const q = await createQueue(f);
  const { workflow } = await newWorkflow(api, [taskStep('a', q.id), taskStep('b', q.id, { after: ['a'] })]);
  const run = await startRun(api, workflow.id);
  const { w, workerId } = await connect(f, [q.id]);
  return { q, run, w, workerId };
}

/** A queue, a workflow list → each (one task per element of list's output) → `last` on it, and a
 * run of it started (list's task is assigned next to a worker on the queue). */
export async function startFanOutRun(f: Fixture, api: Api, last: string): Promise<{ q: Queue; run: WorkflowRun }> {
  const q = await createQueue(f);
  const { workflow } = await newWorkflow(api, [
    taskStep('list', q.id),
    taskStep('each', q.id, { after: ['list'], for_each: 'list' }),
    taskStep(last, q.id, { after: ['each'] }),
  ]);
  return { q, run: await startRun(api, workflow.id) };
}

/** POST /v1/workflows of a version with these steps (support/workflows.ts newWorkflow); returns
 * {workflow, version}. */
export function newWorkflow(api: Api, steps: unknown[]): Promise<{ workflow: any; version: any }> {
  return newDefinition(api, { steps });
}

export function startRunRaw(api: Api, workflowId: string, body: Record<string, unknown> = {}, key = ikey('run')): Promise<RawResponse> {
  return call(api.url, 'POST', `/v1/workflows/${workflowId}/runs`, { token: api.token, key, body });
}

export async function startRun(api: Api, workflowId: string, body: Record<string, unknown> = {}): Promise<WorkflowRun> {
  return expectData(await startRunRaw(api, workflowId, body), 201).run;
}

export function runCommand(
  api: Api,
  runId: string,
  verb: 'pause' | 'resume' | 'cancel',
  body: Record<string, unknown> = {},
  key = ikey(verb),
): Promise<RawResponse> {
  return call(api.url, 'POST', `/v1/workflow-runs/${runId}:${verb}`, { token: api.token, key, body });
}

export function signal(api: Api, runId: string, name: string, payload?: unknown, key = ikey('sig')): Promise<RawResponse> {
  return call(api.url, 'POST', `/v1/workflow-runs/${runId}/signals`, { token: api.token, key, body: payload === undefined ? { name } : { name, payload } });
}

export async function getRun(api: Api, runId: string): Promise<WorkflowRun> {
  return expectData(await call(api.url, 'GET', `/v1/workflow-runs/${runId}`, { token: api.token }), 200).run;
}

export function stepOf(run: any, key: string): any {
  return run.steps.find((s: any) => s.key === key);
}

export async function waitRun(api: Api, runId: string, ok: (run: WorkflowRun) => boolean, what: string, ms = 10_000): Promise<WorkflowRun> {
  return waitFor(
    what,
    async () => {
      const r = await getRun(api, runId);
      return ok(r) ? r : null;
    },
    ms,
  );
}

export const waitRunState = (api: Api, runId: string, state: string, ms = 10_000) => waitRun(api, runId, (r) => r.state === state, `run ${state}`, ms);
export const waitStepState = (api: Api, runId: string, key: string, state: string, ms = 10_000) =>
  waitRun(api, runId, (r) => stepOf(r, key)?.state === state, `step ${key} ${state}`, ms);

/** The next task.assign on `w`, started; returns the frame. */
export async function takeStarted(w: RawWorker, ms = 10_000): Promise<any> {
  const a = await nextOf(w, ['task.assign'], ms);
  await start(w, a.attempt_id);
  return a;
}

/** Answers every task.assign by `answer` until `done()` (checked between frames). */
export async function serve(
  w: RawWorker,
  answer: (a: any) => { outcome: string; output?: unknown; error?: unknown },
  done: () => Promise<boolean>,
  ms = 15_000,
): Promise<any[]> {
  const seen: any[] = [];
  const until = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > until) throw new Error(`serve: not done within ${ms} ms after ${seen.length} tasks`);
    const i = w.frames.findIndex((f) => f.type === 'task.assign');
    if (i < 0) {
      await new Promise((r) => setTimeout(r, 20));
      continue;
    }
    const a = w.frames.splice(i, 1)[0];
    seen.push(a);
    await start(w, a.attempt_id);
    const x = answer(a);
    const extra: Record<string, unknown> = {};
    if (x.output !== undefined) extra.output = x.output;
    if (x.error !== undefined) extra.error = x.error;
    const r = await result(w, a.attempt_id, x.outcome, extra);
    expect(r.type).toBe('result.ok');
  }
  return seen;
}

export async function sqlStepTasks(f: Fixture, runId: string): Promise<RowDataPacket[]> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>(
    'SELECT st.step_key, st.item_index, t.id, t.state, t.workflow_run_id, t.workflow_step, t.workflow_index FROM workflow_step_tasks st JOIN tasks t ON t.id = st.task_id WHERE st.run_id = ? ORDER BY st.step_key, st.item_index',
    [runId],
  );
  return rows;
}

/** The invariants of docs/workflows.md over every run in the file's database, of which there are at
 * least `minRuns` (a file's last test: the runs its tests finished, cancelled or left waiting). */
export async function expectRunInvariants(f: Fixture, minRuns: number): Promise<void> {
  expect(await workflowViolations(f.db.pool)).toEqual([]);
  const [runs] = await f.db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM workflow_runs');
  expect(Number(runs[0]!.n)).toBeGreaterThanOrEqual(minRuns);
}
