// The decision model of workflow advancement (server/workflows/decide.ts, advance.ts) against
// docs/workflows.md: run_if with skip cascades, for_each expansion and its failures, review, signals,
// pause and resume, the quota's READY steps, cancel, and a fast-check property over random DAGs
// (≤ 50 steps, random run_if, random task outcomes and events) checked by an oracle of the spec's
// rules written here independently of the module. Pure: no database (the transactional
// advancement that applies these plans is tested against MariaDB when it exists).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { WorkflowStep } from '../protocol/workflow-views.js';
import { buildGraph } from '../server/workflows/graph.js';
import { initialRunView, planStart, planTasksChanged } from '../server/workflows/advance.js';
import type { NewStepTask } from '../server/workflows/decide.js';
import { apply, prng, WorkflowSim, type SimTask } from './support/workflow-sim.js';

const Q = '11111111111111111111111111111111';
const T = {
  queue_id: Q,
  handler: 'h',
  handler_version: 'v1',
  payload_version: 'v1',
  priority: 0,
  max_attempts: 3,
  deadline_seconds: 86400,
  params: {},
  use_run_key: false,
};
const task = (key: string, after: string[] = [], extra: Partial<WorkflowStep> = {}): WorkflowStep => ({
  key,
  after,
  ...(after.length > 0 ? { run_if: 'all_succeeded' as const } : {}),
  delay_seconds: 0,
  task: { ...T },
  ...extra,
});
const signal = (key: string, name: string, after: string[] = []): WorkflowStep => ({
  key,
  after,
  ...(after.length > 0 ? { run_if: 'all_succeeded' as const } : {}),
  signal: { name, timeout_seconds: 60 },
});
const states = (sim: WorkflowSim) =>
  Object.fromEntries(Object.entries(sim.run.steps).map(([k, v]) => [k, v.skipped_because ? `${v.state}:${v.skipped_because}` : v.state]));
const only = (sim: WorkflowSim, key: string): SimTask => sim.tasks.get(key)![0]!;

describe('run_if and skip cascades', () => {
  // The spec's example: fetch → split → index (for_each split), approve (signal) → publish → undo (compensation).
  const spec = [
    task('fetch'),
    task('split', ['fetch']),
    task('index', ['split'], { for_each: 'split' }),
    signal('approve', 'approved', ['split']),
    task('publish', ['index', 'approve'], { delay_seconds: 60 }),
    task('undo', ['publish'], { run_if: 'any_failed' }),
  ];
  const g = buildGraph(spec);

  it('all succeed: outputs in element order, the signal consumed, the compensation skipped (condition)', () => {
    const sim = new WorkflowSim(g, (key, i) => (key === 'split' ? ['a', 'b', 'c'] : `${key}#${i}`));
    sim.setTask('fetch', only(sim, 'fetch'), 'SUCCEEDED');
    expect(sim.signal('approved', { by: 'ann' })).toBe('kept'); // approve not reached yet
    sim.setTask('split', only(sim, 'split'), 'SUCCEEDED');
    expect(sim.run.steps.approve).toEqual({ state: 'SUCCEEDED', output: { by: 'ann' } });
    const idx = sim.tasks.get('index')!;
    expect(idx.map((t) => t.index)).toEqual([0, 1, 2]);
    for (const t of [idx[2]!, idx[0]!, idx[1]!]) sim.setTask('index', t, 'SUCCEEDED');
    expect(sim.run.steps.index!.output).toEqual(['index#0', 'index#1', 'index#2']);
    sim.setTask('publish', only(sim, 'publish'), 'SUCCEEDED');
    expect(states(sim)).toMatchObject({ publish: 'SUCCEEDED', undo: 'SKIPPED:condition' });
    expect(sim.run.state).toBe('SUCCEEDED');
  });

  it('the first step fails: every all_succeeded descendant skipped (parent_failed), the compensation runs, the run FAILED', () => {
    const sim = new WorkflowSim(g, () => null);
    sim.setTask('fetch', only(sim, 'fetch'), 'FAILED');
    expect(states(sim)).toEqual({
      fetch: 'FAILED',
      split: 'SKIPPED:parent_failed',
      index: 'SKIPPED:parent_failed',
      approve: 'SKIPPED:parent_failed',
      publish: 'SKIPPED:parent_failed',
      undo: 'ACTIVE',
    });
    expect(sim.run.steps.fetch!.error).toEqual({ code: 'WORKER_FAILED', message: 'task fetch[0] failed' });
    sim.setTask('undo', only(sim, 'undo'), 'SUCCEEDED');
    expect(sim.run.state).toBe('FAILED');
  });

  it('a condition skip cascades to all_succeeded and any_failed children; always children run; skipped steps never fail the run', () => {
    const g2 = buildGraph([
      task('a'),
      task('b', ['a'], { run_if: 'any_failed' }),
      task('c', ['b']),
      task('d', ['b'], { run_if: 'any_failed' }),
      task('e', ['b'], { run_if: 'always' }),
    ]);
    const sim = new WorkflowSim(g2, () => 1);
    sim.setTask('a', only(sim, 'a'), 'SUCCEEDED');
    expect(states(sim)).toEqual({ a: 'SUCCEEDED', b: 'SKIPPED:condition', c: 'SKIPPED:condition', d: 'SKIPPED:condition', e: 'ACTIVE' });
    // `parents` holds only succeeded parents: e's payload has none of b.
    const plan = planStart(g2, { ...initialRunView(g2, 'in'), steps: { ...sim.run.steps, e: { state: 'PENDING' } } });
    const e = plan.changes.find((c) => c.key === 'e');
    expect(e && 'tasks' in e ? JSON.parse(e.tasks[0]!.payloadJson) : null).toEqual({ input: 'in', params: {}, parents: {} });
    sim.setTask('e', only(sim, 'e'), 'SUCCEEDED');
    expect(sim.run.state).toBe('SUCCEEDED');
  });
});

describe('task steps: for_each, failures, review', () => {
  it('for_each: 0 elements succeed at once with []; a non-array or 1001 elements fail with FOR_EACH_INVALID', () => {
    for (const [out, expected] of [
      [[], { state: 'SUCCEEDED', output: [] }],
      [{ not: 'an array' }, { state: 'FAILED', code: 'FOR_EACH_INVALID' }],
      [Array.from({ length: 1001 }, () => 0), { state: 'FAILED', code: 'FOR_EACH_INVALID' }],
    ] as const) {
      const sim = new WorkflowSim(buildGraph([task('src'), task('each', ['src'], { for_each: 'src' })]), () => out);
      sim.setTask('src', only(sim, 'src'), 'SUCCEEDED');
      const s = sim.run.steps.each!;
      expect({ state: s.state, ...(s.error ? { code: s.error.code } : { output: s.output }) }).toEqual(expected);
      expect(sim.tasks.has('each')).toBe(false);
    }
  });

  it('one element fails: its WAITING siblings are cancelled at once, leased and running ones go on, the step fails when they end', () => {
    const sim = new WorkflowSim(buildGraph([task('src'), task('each', ['src'], { for_each: 'src' })]), () => [1, 2, 3, 4]);
    sim.setTask('src', only(sim, 'src'), 'SUCCEEDED');
    const [t0, t1, t2, t3] = sim.tasks.get('each')!;
    sim.setTask('each', t1!, 'LEASED');
    sim.setTask('each', t2!, 'RUNNING');
    sim.setTask('each', t3!, 'DEADLINE_EXCEEDED');
    expect([t0!.state, t1!.state, t2!.state]).toEqual(['CANCELLED', 'LEASED', 'RUNNING']);
    expect(sim.run.steps.each!.state).toBe('ACTIVE');
    sim.setTask('each', t1!, 'SUCCEEDED');
    sim.setTask('each', t2!, 'SUCCEEDED');
    // The cause is named, not the cascade's cancellation of element 0.
    expect(sim.run.steps.each).toEqual({ state: 'FAILED', error: { code: 'DEADLINE_EXCEEDED', message: 'element 3: deadline' } });
    expect(sim.run.state).toBe('FAILED');
  });

  it('NEEDS_REVIEW holds the step IN_REVIEW; resolve retry → ACTIVE, succeeded → output null', () => {
    const sim = new WorkflowSim(buildGraph([task('a'), task('b', ['a'])]), () => 'out');
    const a = only(sim, 'a');
    sim.setTask('a', a, 'NEEDS_REVIEW');
    expect(sim.run.steps.a!.state).toBe('IN_REVIEW');
    sim.setTask('a', a, 'WAITING'); // :resolve retry
    expect(sim.run.steps.a!.state).toBe('ACTIVE');
    sim.setTask('a', a, 'NEEDS_REVIEW');
    a.output = null; // :resolve succeeded records output null
    sim.setTask('a', a, 'SUCCEEDED');
    expect(sim.run.steps.a).toEqual({ state: 'SUCCEEDED', output: null });
    expect(sim.run.steps.b!.state).toBe('ACTIVE');
  });

  it('use_run_key tasks carry the run key, fixed keys stay, delay becomes the tasks’ delay; a payload over 256 KiB fails the step', () => {
    const g = buildGraph([
      task('a', [], { task: { ...T, use_run_key: true } }),
      task('b', [], { task: { ...T, concurrency_key: 'fixed' }, delay_seconds: 30 }),
      task('c', [], { task: { ...T, params: 'x'.repeat(256 * 1024) } }),
      task('d', ['c'], { run_if: 'any_failed' }),
    ]);
    const plan = planStart(g, initialRunView(g, null, 'object/42'));
    const tasks: Record<string, NewStepTask> = Object.fromEntries(plan.changes.flatMap((c) => ('tasks' in c ? [[c.key, c.tasks[0]!]] : [])));
    expect(tasks.a!.task.concurrency_key).toBe('object/42');
    expect(tasks.b!.task.concurrency_key).toBe('fixed');
    expect(tasks.b!.delay_seconds).toBe(30);
    expect(apply(initialRunView(g, null), plan).steps.c).toMatchObject({ state: 'FAILED', error: { code: 'PAYLOAD_TOO_LARGE' } });
    expect(tasks.d).toBeDefined(); // its compensation started in the same plan
    expect(plan.tasksCreated).toBe(3);
  });
});

describe('signals, pause and resume, quota, cancel', () => {
  it('a signal step times out with SIGNAL_TIMEOUT; a signal after that is late; a signal arrives while paused', () => {
    const g = buildGraph([signal('wait', 'go'), task('after', ['wait'])]);
    const sim = new WorkflowSim(g, () => 1);
    expect(sim.run.steps.wait!.state).toBe('WAITING_SIGNAL');
    sim.timeout('wait');
    expect(sim.run.steps.wait).toEqual({ state: 'FAILED', error: { code: 'SIGNAL_TIMEOUT', message: 'signal go not received within 60 s' } });
    expect(sim.run.state).toBe('FAILED');
    expect(sim.signal('go', 1)).toBe('late');
    const p = new WorkflowSim(g, () => 1);
    p.pause();
    expect(p.signal('go', { ok: true })).toBe('consumed');
    expect(states(p)).toEqual({ wait: 'SUCCEEDED', after: 'READY' });
    p.resume();
    expect(p.run.state).toBe('RUNNING');
    expect(states(p)).toEqual({ wait: 'SUCCEEDED', after: 'ACTIVE' });
  });

  it('a step whose tasks do not fit the quota stays READY until the sweeper finds room', () => {
    const g = buildGraph([task('a'), task('b', ['a'])]);
    const sim = new WorkflowSim(g, () => 1);
    sim.setTask('a', only(sim, 'a'), 'SUCCEEDED', 0);
    expect(states(sim)).toEqual({ a: 'SUCCEEDED', b: 'READY' });
    sim.sweep(0);
    expect(sim.run.steps.b!.state).toBe('READY');
    sim.sweep(1);
    expect(sim.run.steps.b!.state).toBe('ACTIVE');
  });

  it('cancel: unfinished steps CANCELLED, WAITING and LEASED tasks cancelled, a RUNNING one is recorded when it ends and starts nothing', () => {
    const g = buildGraph([task('a'), task('b'), task('c'), task('d', ['a'])]);
    const sim = new WorkflowSim(g, () => 1);
    sim.setTask('b', only(sim, 'b'), 'LEASED');
    sim.setTask('c', only(sim, 'c'), 'RUNNING');
    sim.cancel();
    expect(sim.run.state).toBe('CANCELLED');
    expect(states(sim)).toEqual({ a: 'CANCELLED', b: 'CANCELLED', c: 'CANCELLED', d: 'CANCELLED' });
    expect([only(sim, 'a').state, only(sim, 'b').state, only(sim, 'c').state]).toEqual(['CANCELLED', 'CANCELLED', 'RUNNING']);
    const plan = planTasksChanged(g, sim.run, [{ key: 'c', tasks: [{ index: 0, state: 'SUCCEEDED', output: 1 }] }]);
    expect(plan).toEqual({ changes: [], cancel: [], run: 'CANCELLED', tasksCreated: 0 });
  });
});

// ---- the property ------------------------------------------------------------------------------

interface GenStep {
  kind: 'task' | 'signal';
  parents: readonly number[];
  runIf: 'all_succeeded' | 'any_failed' | 'always';
  forEach: boolean;
}

/** A random DAG of 1-50 steps (parents among earlier positions), listed in a random order. */
const dagArb = fc.integer({ min: 1, max: 50 }).chain((n) =>
  fc.record({
    steps: fc.tuple(
      ...Array.from({ length: n }, (_, i) =>
        fc.record({
          kind: fc.constantFrom<GenStep['kind']>('task', 'task', 'task', 'signal'),
          parents: i === 0 ? fc.constant([]) : fc.uniqueArray(fc.integer({ min: 0, max: i - 1 }), { maxLength: Math.min(4, i) }),
          runIf: fc.constantFrom<GenStep['runIf']>('all_succeeded', 'any_failed', 'always'),
          forEach: fc.boolean(),
        }),
      ),
    ),
    order: fc.shuffledSubarray(
      Array.from({ length: n }, (_, i) => i),
      { minLength: n, maxLength: n },
    ),
    seed: fc.integer(),
  }),
);

function toVersion(gen: GenStep[], order: number[]): WorkflowStep[] {
  return order.map((i) => {
    const s = gen[i]!;
    const after = s.parents.map((p) => `s${p}`);
    const source = s.parents.find((p) => gen[p]!.kind === 'task');
    const base = { key: `s${i}`, after, ...(after.length > 0 ? { run_if: s.runIf } : {}) };
    if (s.kind === 'signal') return { ...base, signal: { name: `sig${i}`, timeout_seconds: 60 } };
    return { ...base, delay_seconds: 0, task: { ...T }, ...(s.forEach && source !== undefined ? { for_each: `s${source}` } : {}) };
  });
}

/** Drives a run to its end with random events; returns the simulation. */
function drive(steps: WorkflowStep[], seed: number): WorkflowSim {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const sources = new Set(steps.flatMap((s) => (s.for_each ? [s.for_each] : [])));
  const sim = new WorkflowSim(buildGraph(steps), (key, i) =>
    sources.has(key) ? (rnd() < bad / 2 ? 'not an array' : Array.from({ length: Math.floor(rnd() * 4) }, (_, j) => `${key}.${i}.${j}`)) : `${key}.${i}`,
  );
  const cancelAt = rnd() < 0.1 ? Math.floor(rnd() * 40) : -1;
  // How often a task takes an odd turn (fails, is cancelled, expires, goes to review): none in a
  // third of the runs, so that long chains also succeed to their end.
  const bad = rnd() < 0.35 ? 0 : rnd() * 0.25;
  for (let n = 0; n < 20_000; n++) {
    if (n === cancelAt && sim.run.state !== 'SUCCEEDED' && sim.run.state !== 'FAILED') sim.cancel();
    const live = sim.unfinishedTasks();
    const waiting = steps.filter((s) => sim.run.steps[s.key]!.state === 'WAITING_SIGNAL');
    const unsent = steps.filter((s) => s.signal && !sim.sent.has(s.signal.name));
    const ready = Object.values(sim.run.steps).some((s) => s.state === 'READY');
    const final = sim.run.state === 'SUCCEEDED' || sim.run.state === 'FAILED' || sim.run.state === 'CANCELLED';
    if (final && live.length === 0) return sim;
    const r = rnd();
    const room = rnd() < 0.15 ? 0 : undefined; // the quota is full for this transaction
    if (!final && r < 0.05) {
      if (sim.run.state === 'RUNNING') sim.pause();
      else sim.resume(room);
    } else if (!final && r < 0.12 && unsent.length > 0) {
      sim.signal(pick(unsent).signal!.name, { n });
    } else if (!final && r < 0.12 + bad / 10 && waiting.length > 0) {
      sim.timeout(pick(waiting).key);
    } else if (!final && ready && (r < 0.2 || live.length === 0)) {
      if (sim.run.state === 'PAUSED') sim.resume();
      else sim.sweep(rnd() < 0.5 ? room : undefined);
    } else if (live.length > 0) {
      const { key, t } = pick(live);
      // The happy transition, or (with the run's `bad` probability) another one.
      const odd = rnd() < bad;
      const to =
        t.state === 'WAITING'
          ? odd
            ? pick(['DEADLINE_EXCEEDED', 'CANCELLED'] as const)
            : 'LEASED'
          : t.state === 'LEASED'
            ? odd
              ? pick(['CANCELLED', 'WAITING'] as const) // WAITING: the lease expired before start
              : 'RUNNING'
            : t.state === 'RUNNING'
              ? odd
                ? pick(['FAILED', 'NEEDS_REVIEW', 'WAITING'] as const) // WAITING: a retry
                : 'SUCCEEDED'
              : pick(['SUCCEEDED', 'FAILED', 'WAITING'] as const); // :resolve
      if (to === 'SUCCEEDED' && t.state === 'NEEDS_REVIEW') t.output = null;
      sim.setTask(key, t, to, room);
    } else if (waiting.length > 0) {
      // Nothing else can move: the signal arrives or its timeout passes.
      const s = pick(waiting);
      if (rnd() < 0.5 && !sim.sent.has(s.signal!.name)) sim.signal(s.signal!.name, { n });
      else sim.timeout(s.key);
    } else if (sim.run.state === 'PAUSED') {
      sim.resume();
    } else {
      throw new Error(`no event can move the run: ${JSON.stringify(sim.run)}`);
    }
  }
  throw new Error('the run did not end within 20000 events');
}

/** The spec's rules, restated: what a finished step's state must be given its parents'. */
function checkRun(steps: WorkflowStep[], sim: WorkflowSim): void {
  const st = sim.run.steps;
  const failedLike = (k: string) => st[k]!.state === 'FAILED' || (st[k]!.state === 'SKIPPED' && st[k]!.skipped_because === 'parent_failed');
  const cancelled = sim.run.state === 'CANCELLED';
  for (const s of steps) {
    const v = st[s.key]!;
    const started = sim.startedAt.get(s.key);
    if (started !== undefined) {
      for (const p of s.after) {
        const f = sim.finishedAt.get(p);
        expect(f !== undefined && f <= started, `${s.key} started at ${started} before parent ${p} finished (${f})`).toBe(true);
      }
    }
    if (cancelled && v.state === 'CANCELLED') {
      expect(sim.finishedAt.get(s.key)).toBe(sim.cancelledAt);
      continue;
    }
    expect(['SUCCEEDED', 'FAILED', 'SKIPPED'], `${s.key} ended ${v.state}`).toContain(v.state);
    const ps = s.after;
    const allOk = ps.every((p) => st[p]!.state === 'SUCCEEDED');
    const anyFailed = ps.some(failedLike);
    const rule = s.run_if ?? 'all_succeeded';
    const shouldStart = ps.length === 0 || rule === 'always' || (rule === 'all_succeeded' ? allOk : anyFailed);
    if (!shouldStart) {
      expect(v, s.key).toEqual({ state: 'SKIPPED', skipped_because: rule === 'all_succeeded' && anyFailed ? 'parent_failed' : 'condition' });
      expect(started, `${s.key} skipped but started`).toBeUndefined();
      expect(sim.tasks.has(s.key)).toBe(false);
      continue;
    }
    expect(started, `${s.key} should have started`).toBeDefined();
    if (s.signal) {
      const sent = sim.sent.get(s.signal.name);
      if (v.state === 'SUCCEEDED') expect(v.output).toEqual(sent!.payload);
      else expect([v.error?.code, sim.timedOut.has(s.key)]).toEqual(['SIGNAL_TIMEOUT', true]);
      continue;
    }
    const tasks = sim.tasks.get(s.key) ?? [];
    if (s.for_each) {
      const src = st[s.for_each]!;
      if (src.state !== 'SUCCEEDED' || !Array.isArray(src.output)) {
        expect([v.state, v.error?.code, tasks.length]).toEqual(['FAILED', 'FOR_EACH_INVALID', 0]);
        continue;
      }
      expect(tasks.map((t) => t.index)).toEqual(src.output.map((_, i) => i));
    } else {
      expect(tasks).toHaveLength(1);
    }
    const ok = tasks.every((t) => t.state === 'SUCCEEDED');
    expect(v.state, `${s.key}: tasks ${tasks.map((t) => t.state).join(',')}`).toBe(ok ? 'SUCCEEDED' : 'FAILED');
    if (ok) expect(v.output).toEqual(s.for_each ? tasks.map((t) => t.output) : tasks[0]!.output);
  }
  if (!cancelled) {
    const anyFailedStep = steps.some((s) => st[s.key]!.state === 'FAILED');
    expect(sim.run.state).toBe(anyFailedStep ? 'FAILED' : 'SUCCEEDED');
  }
}

describe('property: random DAGs driven to their end obey the spec’s rules', () => {
  it('every step’s final state, every start after its parents, one task per (step, index), the run’s state', () => {
    fc.assert(
      fc.property(dagArb, ({ steps: gen, order, seed }) => {
        const steps = toVersion(gen, order);
        checkRun(steps, drive(steps, seed));
      }),
      { numRuns: 200 },
    );
  });
});
