// A workflow version checked beyond its schema and normalized, so that the command can be
// fingerprinted and the version stored immutable; plus run start and signal bodies. Pure: checks
// that need the database (queues, their max_attempts defaults) are the caller's. A refusal names
// the field by its body path and, where steps are the problem, the steps; the first problem found
// is reported, so the order of the checks below is part of the contract.
import { OrbitError } from '@orbit/protocol/errors';
import {
  DEFAULT_SIGNAL_TIMEOUT_SECONDS,
  MAX_RUN_INPUT_BYTES,
  MAX_SIGNAL_PAYLOAD_BYTES,
  MAX_STEP_PARAMS_BYTES,
  MAX_WORKFLOW_STEPS,
} from '@orbit/protocol/limits';
import type { WorkflowStep, WorkflowStepTask } from '@orbit/protocol/workflow-views';
import type { SendSignalBody, StartWorkflowRunBody, WorkflowStepInput, WorkflowVersionInput } from '@orbit/protocol/workflow-schemas';
import { concurrencyKeyProblem } from '@orbit/protocol/validation';
import { lossyNumberPath, normalizeSubmit } from '../dispatch/submit-input.js';
import { topologicalOrder } from './graph.js';
import { underField } from '../boundary.js';

/** Before the queue defaults are applied. */
export type DraftStepTask = Omit<WorkflowStepTask, 'max_attempts'> & { max_attempts?: number };
export type DraftStep = Omit<WorkflowStep, 'task'> & { task?: DraftStepTask };

function invalid(field: string, problem: string, steps?: string[]): OrbitError {
  return new OrbitError('INVALID_ARGUMENT', `${field}: ${problem}`, steps ? { field, steps } : { field });
}

/** Returns the serialization. */
function checkJson(v: unknown, field: string, max: number): string {
  const json = JSON.stringify(v);
  if (Buffer.byteLength(json) > max) throw new OrbitError('PAYLOAD_TOO_LARGE', `${field}: serialized over ${max} bytes`, { field });
  const lossy = lossyNumberPath(v, field);
  if (lossy) throw invalid(lossy, 'number beyond ±2^53 would lose precision; send it as a string');
  return json;
}

/** The rules of POST /v1/tasks, plus params and use_run_key. */
function normalizeStepTask(t: NonNullable<WorkflowStepInput['task']>, field: string): DraftStepTask {
  const { params, use_run_key, ...submit } = t;
  const n = underField(field, () => normalizeSubmit({ ...submit, payload: null }).normalized);
  const p = params === undefined ? {} : params;
  checkJson(p, `${field}.params`, MAX_STEP_PARAMS_BYTES);
  const useRunKey = use_run_key ?? false;
  if (useRunKey && n.concurrency_key !== undefined) {
    throw invalid(`${field}.use_run_key`, 'not together with concurrency_key: use_run_key gives the tasks the run\u2019s key instead');
  }
  const out: DraftStepTask = {
    queue_id: n.queue_id,
    handler: n.handler,
    handler_version: n.handler_version,
    payload_version: n.payload_version,
    priority: n.priority,
    deadline_seconds: n.deadline_seconds,
    params: p,
    use_run_key: useRunKey,
  };
  if (n.business_key !== undefined) out.business_key = n.business_key;
  if (n.concurrency_key !== undefined) out.concurrency_key = n.concurrency_key;
  if (n.max_attempts !== undefined) out.max_attempts = n.max_attempts;
  return out;
}

export function validateVersion(v: WorkflowVersionInput) {
  const input = v.steps;
  if (input.length < 1 || input.length > MAX_WORKFLOW_STEPS) {
    throw invalid('version.steps', `must have 1-${MAX_WORKFLOW_STEPS} steps (has ${input.length})`);
  }
  const position = new Map<string, number>();
  input.forEach((s, i) => {
    const first = position.get(s.key);
    if (first !== undefined) throw invalid(`version.steps.${i}.key`, `duplicate step key ${JSON.stringify(s.key)} (also step ${first})`, [s.key]);
    position.set(s.key, i);
  });
  const signalOf = new Map<string, string>();
  const parents: number[][] = [];
  const steps = input.map((s, i): DraftStep => {
    const at = `version.steps.${i}`;
    if ((s.task === undefined) === (s.signal === undefined)) {
      throw invalid(at, `step ${JSON.stringify(s.key)} must have exactly one of task or signal (${s.task ? 'both' : 'neither'} given)`, [s.key]);
    }
    const after = s.after ?? [];
    const ps: number[] = [];
    after.forEach((k, j) => {
      const p = position.get(k);
      if (p === undefined) throw invalid(`${at}.after.${j}`, `unknown step ${JSON.stringify(k)}`, [s.key, k]);
      if (p === i) throw invalid(`${at}.after.${j}`, `cycle ${s.key} -> ${s.key}: a step cannot come after itself`, [s.key]);
      if (ps.includes(p)) throw invalid(`${at}.after.${j}`, `${JSON.stringify(k)} listed twice`, [s.key, k]);
      ps.push(p);
    });
    parents.push(ps);
    if (s.run_if !== undefined && after.length === 0)
      throw invalid(`${at}.run_if`, `only on a step with parents (${JSON.stringify(s.key)} is a root)`, [s.key]);
    const step: DraftStep = { key: s.key, after: [...after] };
    if (after.length > 0) step.run_if = s.run_if ?? 'all_succeeded';
    if (s.signal) {
      if (s.for_each !== undefined) throw invalid(`${at}.for_each`, 'only on a task step', [s.key]);
      if (s.delay_seconds !== undefined) throw invalid(`${at}.delay_seconds`, 'only on a task step', [s.key]);
      const other = signalOf.get(s.signal.name);
      if (other !== undefined)
        throw invalid(`${at}.signal.name`, `duplicate signal name ${JSON.stringify(s.signal.name)} (also step ${JSON.stringify(other)})`, [other, s.key]);
      signalOf.set(s.signal.name, s.key);
      step.signal = { name: s.signal.name, timeout_seconds: s.signal.timeout_seconds ?? DEFAULT_SIGNAL_TIMEOUT_SECONDS };
    } else {
      const task = normalizeStepTask(s.task!, `${at}.task`);
      if (s.for_each !== undefined) {
        if (!after.includes(s.for_each))
          throw invalid(`${at}.for_each`, `must name one of the step's after parents (${JSON.stringify(s.for_each)} is not)`, [s.key]);
        if (input[position.get(s.for_each)!]!.task === undefined) {
          throw invalid(`${at}.for_each`, `must name a task step (${JSON.stringify(s.for_each)} is a signal step)`, [s.key, s.for_each]);
        }
        step.for_each = s.for_each;
      }
      const delay = s.delay_seconds ?? 0;
      if (delay >= task.deadline_seconds) {
        throw invalid(`${at}.delay_seconds`, `must be less than task.deadline_seconds (${delay} >= ${task.deadline_seconds})`, [s.key]);
      }
      step.delay_seconds = delay;
      step.task = task;
    }
    return step;
  });
  const topo = topologicalOrder(input.length, parents);
  if ('cycle' in topo) {
    const keys = topo.cycle.map((i) => input[i]!.key);
    throw invalid(`version.steps.${topo.cycle[0]}.after`, `cycle ${[...keys, keys[0]].join(' -> ')}`, keys);
  }
  // Sorted, each once; the version stores the set for queue retirement to read.
  const queueIds = [...new Set(steps.flatMap((s) => (s.task ? [s.task.queue_id] : [])))].sort();
  return { steps, queueIds };
}

export function withQueueDefaults(steps: readonly DraftStep[], maxAttemptsOf: (queueId: string) => number): WorkflowStep[] {
  return steps.map((s) => (s.task ? { ...s, task: { ...s.task, max_attempts: s.task.max_attempts ?? maxAttemptsOf(s.task.queue_id) } } : (s as WorkflowStep)));
}

export interface NormalizedRunStart {
  input: unknown;
  inputJson: string;
  /** undefined: the current version at acceptance, frozen in the receipt. */
  version?: number;
  concurrency_key?: string;
}

/** concurrency_key as in submit: "" means none. */
export function normalizeRunStart(b: StartWorkflowRunBody): NormalizedRunStart {
  const input = b.input === undefined ? null : b.input;
  const inputJson = checkJson(input, 'input', MAX_RUN_INPUT_BYTES);
  const key = b.concurrency_key === '' ? undefined : b.concurrency_key;
  if (key !== undefined) {
    const p = concurrencyKeyProblem(key);
    if (p) throw invalid('concurrency_key', p);
  }
  const out: NormalizedRunStart = { input, inputJson };
  if (b.version !== undefined) out.version = b.version;
  if (key !== undefined) out.concurrency_key = key;
  return out;
}

/** Without a key, use_run_key steps would run unkeyed and two runs on one object could hold it at
 * once, which the version's author asked to exclude (docs/design.md "Workflows"). */
export function runKeyProblem(steps: readonly { key: string; task?: { use_run_key: boolean } }[], concurrencyKey: string | undefined): OrbitError | null {
  if (concurrencyKey !== undefined) return null;
  const keyed = steps.filter((s) => s.task?.use_run_key).map((s) => s.key);
  if (keyed.length === 0) return null;
  return invalid('concurrency_key', `required: step(s) ${keyed.join(', ')} use the run's key (use_run_key)`, keyed);
}

/** Whether a step waits for the name is the caller's check. */
export function normalizeSignal(b: SendSignalBody) {
  const payload = b.payload === undefined ? null : b.payload;
  return { name: b.name, payload, payloadJson: checkJson(payload, 'payload', MAX_SIGNAL_PAYLOAD_BYTES) };
}

export type NormalizedSignal = ReturnType<typeof normalizeSignal>;
