// A run as a transaction reads it and as the API shows it. Published versions never change, so
// each node caches their graphs instead of reading and parsing them at every advancement.
import type { WorkflowRun, WorkflowRunStep, WorkflowStep } from '@orbit/protocol/workflow-views';
import { isFinishedStepState } from '@orbit/protocol/states';
import { toIso, type Conn, type Pool } from '../db/pool.js';
import { getVersion } from '../db/workflow-versions.js';
import { readRunSteps, type RunStepRow } from '../db/workflow-run-steps.js';
import { readStepTasks } from '../db/workflow-step-tasks.js';
import { readKeptSignals } from '../db/workflow-signals.js';
import { runSummaryView, type RunRow } from '../db/workflow-runs.js';
import { buildGraph, type StepGraph } from './graph.js';
import type { RunView } from './advance.js';
import type { StepView } from './decide.js';
import { groupBy } from '../group-by.js';

export interface VersionGraph {
  steps: readonly WorkflowStep[];
  queueIds: readonly string[];
  graph: StepGraph;
}

const versions = new Map<string, VersionGraph>();

export async function findVersionGraph(db: Pool | Conn, workflowId: string, number: number): Promise<VersionGraph | null> {
  const k = `${workflowId}/${number}`;
  let v = versions.get(k);
  if (!v) {
    const row = await getVersion(db, workflowId, number);
    if (!row) return null;
    v = { steps: row.steps, queueIds: row.queueIds, graph: buildGraph(row.steps) };
    if (versions.size > 10_000) versions.clear();
    versions.set(k, v);
  }
  return v;
}

/** A run's version always exists: runs reference published versions. */
export async function versionGraph(db: Pool | Conn, workflowId: string, number: number): Promise<VersionGraph> {
  const v = await findVersionGraph(db, workflowId, number);
  if (!v) throw new Error(`workflow version ${workflowId}/${number} not found`);
  return v;
}

export interface LoadedRun {
  row: RunRow;
  version: VersionGraph;
  steps: Map<string, RunStepRow>;
  view: RunView;
}

const parsed = (json: string | null): unknown => (json === null ? null : JSON.parse(json));

function stepView(r: RunStepRow, output?: unknown): StepView {
  const v: StepView = { state: r.state };
  if (r.state === 'SUCCEEDED') v.output = output !== undefined ? output : parsed(r.output);
  if (r.error_code) v.error = { code: r.error_code, message: r.error_message ?? '' };
  if (r.skipped_because) v.skipped_because = r.skipped_because;
  return v;
}

/** For a run the caller has locked. for_each outputs are read only while a child still needs them. */
export async function loadRun(c: Conn, row: RunRow): Promise<LoadedRun> {
  const version = await versionGraph(c, row.workflow_id, Number(row.version));
  const rows = await readRunSteps(c, [row.id]);
  const steps = new Map(rows.map((r) => [r.step_key, r]));
  const g = version.graph;
  const needed = g.steps
    .filter((s) => s.for_each !== undefined && steps.get(s.key)?.state === 'SUCCEEDED')
    .filter((s) => g.children[g.index.get(s.key)!]!.some((ci) => !isFinishedStepState(steps.get(g.steps[ci]!.key)!.state)))
    .map((s) => s.key);
  // A for_each step's output is read from its tasks: the step row would be too large to store it.
  const outputs = new Map<string, unknown[]>(needed.map((k) => [k, []]));
  if (needed.length > 0) for (const t of await readStepTasks(c, row.id, needed)) outputs.get(t.step_key)!.push(parsed(t.result_output));
  const kept: Record<string, unknown> = {};
  if (g.steps.some((s) => s.signal)) for (const [name, payload] of await readKeptSignals(c, row.id)) kept[name] = JSON.parse(payload);
  const viewSteps: Record<string, StepView> = {};
  for (const s of g.steps) viewSteps[s.key] = stepView(steps.get(s.key)!, outputs.get(s.key));
  const view: RunView = { state: row.state, input: JSON.parse(row.input), steps: viewSteps, kept };
  if (row.concurrency_key !== null) view.concurrency_key = row.concurrency_key.toString('utf8');
  return { row, version, steps, view };
}

/** The API view; no lock. */
export async function runView(pool: Pool | Conn, row: RunRow): Promise<WorkflowRun> {
  const version = await versionGraph(pool, row.workflow_id, Number(row.version));
  const steps = new Map((await readRunSteps(pool, [row.id])).map((r) => [r.step_key, r]));
  const tasks = await readStepTasks(pool, row.id, null);
  const byStep = groupBy(tasks, (t) => t.step_key);
  const out: WorkflowRunStep[] = version.steps.map((s) => {
    const r = steps.get(s.key)!;
    const ts = byStep.get(s.key) ?? [];
    // Only a SUCCEEDED step shows its output (stepView): the elements' outputs are parsed for it alone.
    const forEachOutput = s.for_each !== undefined && r.state === 'SUCCEEDED' ? ts.map((t) => parsed(t.result_output)) : undefined;
    const v: WorkflowRunStep = { key: s.key, ...stepView(r, forEachOutput), task_ids: ts.map((t) => t.task_id) };
    if (r.started_at) v.started_at = toIso(r.started_at)!;
    if (r.finished_at) v.finished_at = toIso(r.finished_at)!;
    return v;
  });
  return { ...runSummaryView(row), input: JSON.parse(row.input), steps: out };
}
