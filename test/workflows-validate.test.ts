// The validation of a workflow version, a run start and a signal (docs/workflows.md), on the real schemas
// (protocol/workflow-schemas.ts) and the pure validation (server/workflows/validate.ts): every 400 of
// the spec's list with the field and the steps it names, the defaults a published version stores,
// and the set of queues the version names. No database: what needs one (queues exist, are not
// retired, are authorized) is the endpoints' part.
import { describe, expect, it } from 'vitest';
import type { OrbitError } from '../protocol/errors.js';
import { violations } from '../protocol/http-schemas.js';
import { MAX_WORKFLOW_STEPS } from '../protocol/limits.js';
import { CreateWorkflowBody, SendSignalBody, StartWorkflowRunBody, type WorkflowVersionInput } from '../protocol/workflow-schemas.js';
import { normalizeRunStart, normalizeSignal, runKeyProblem, validateVersion, withQueueDefaults } from '../server/workflows/validate.js';

const Q1 = '11111111111111111111111111111111';
const Q2 = '22222222222222222222222222222222';
const task = (queue_id = Q1, extra: Record<string, unknown> = {}) => ({
  queue_id,
  handler: 'doc.step',
  handler_version: 'v1',
  payload_version: 'v1',
  ...extra,
});

/** The refusal of `steps` as {code, field, steps?, message}. */
function refusal(steps: unknown[]): { code: string; field: unknown; steps: unknown; message: string } {
  try {
    validateVersion({ steps } as WorkflowVersionInput);
  } catch (e) {
    // The server's OrbitError is @orbit/protocol's built class, not this file's import of the source.
    if (!(e instanceof Error) || e.name !== 'OrbitError') throw e;
    const err = e as OrbitError;
    return { code: err.code, field: err.details?.field, steps: err.details?.steps, message: err.message };
  }
  throw new Error('accepted');
}

describe('workflow version validation: the 400s of docs/workflows.md', () => {
  it('a cycle is named with its steps in edge order', () => {
    const r = refusal([
      { key: 'a', task: task() },
      { key: 'b', after: ['a', 'd'], task: task() },
      { key: 'c', after: ['b'], task: task() },
      { key: 'd', after: ['c'], task: task() },
    ]);
    expect(r.code).toBe('INVALID_ARGUMENT');
    expect(r.steps).toEqual(['b', 'c', 'd']);
    expect(r.message).toContain('cycle b -> c -> d -> b');
    expect(r.field).toBe('version.steps.1.after');
    // A step after itself is a cycle of one.
    expect(refusal([{ key: 'a', after: ['a'], task: task() }])).toMatchObject({ field: 'version.steps.0.after.0', steps: ['a'] });
  });

  it('unknown and duplicate parents, duplicate keys', () => {
    expect(
      refusal([
        { key: 'a', task: task() },
        { key: 'b', after: ['a', 'zz'], task: task() },
      ]),
    ).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'version.steps.1.after.1',
      steps: ['b', 'zz'],
    });
    expect(
      refusal([
        { key: 'a', task: task() },
        { key: 'b', after: ['a', 'a'], task: task() },
      ]),
    ).toMatchObject({ field: 'version.steps.1.after.1' });
    expect(
      refusal([
        { key: 'a', task: task() },
        { key: 'a', task: task() },
      ]),
    ).toMatchObject({ field: 'version.steps.1.key', steps: ['a'] });
  });

  it(`1-${MAX_WORKFLOW_STEPS} steps: 51 refused by the schema and by the validation; 50 accepted`, () => {
    const chain = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `s${i}`, ...(i > 0 ? { after: [`s${i - 1}`] } : {}), task: task() }));
    expect(refusal(chain(51))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'version.steps' });
    expect(violations(CreateWorkflowBody, { name: 'w', version: { steps: chain(51) } }).map((v) => v.field)).toContain('version.steps');
    expect(violations(CreateWorkflowBody, { name: 'w', version: { steps: [] } }).map((v) => v.field)).toContain('version.steps');
    expect(validateVersion({ steps: chain(50) } as WorkflowVersionInput).steps).toHaveLength(50);
  });

  it('exactly one of task or signal', () => {
    expect(refusal([{ key: 'a', task: task(), signal: { name: 'x' } }])).toMatchObject({ field: 'version.steps.0', steps: ['a'] });
    expect(
      refusal([
        { key: 'a', task: task() },
        { key: 'b', after: ['a'] },
      ]),
    ).toMatchObject({ field: 'version.steps.1', steps: ['b'] });
  });

  it('run_if: not on roots; only its three values (schema)', () => {
    expect(refusal([{ key: 'a', run_if: 'always', task: task() }])).toMatchObject({ field: 'version.steps.0.run_if' });
    const v = violations(CreateWorkflowBody, {
      name: 'w',
      version: {
        steps: [
          { key: 'a', task: task() },
          { key: 'b', after: ['a'], run_if: 'sometimes', task: task() },
        ],
      },
    });
    expect(v).toContainEqual({ field: 'version.steps.1.run_if', message: 'must be one of all_succeeded, any_failed, always' });
  });

  it('for_each: a task step, naming one of its after parents, itself a task step', () => {
    const base = [
      { key: 'a', task: task() },
      { key: 's', signal: { name: 'go' } },
    ];
    expect(refusal([...base, { key: 'b', after: ['a'], for_each: 's', task: task() }])).toMatchObject({ field: 'version.steps.2.for_each', steps: ['b'] });
    expect(refusal([...base, { key: 'b', after: ['a', 's'], for_each: 's', task: task() }])).toMatchObject({
      field: 'version.steps.2.for_each',
      steps: ['b', 's'],
    });
    expect(refusal([...base, { key: 'b', after: ['a'], for_each: 'a', signal: { name: 'x' } }])).toMatchObject({ field: 'version.steps.2.for_each' });
    expect(validateVersion({ steps: [...base, { key: 'b', after: ['a', 's'], for_each: 'a', task: task() }] } as WorkflowVersionInput).steps[2]!.for_each).toBe(
      'a',
    );
  });

  it('delay_seconds: task steps only, less than deadline_seconds', () => {
    expect(refusal([{ key: 'a', delay_seconds: 5, signal: { name: 'x' } }])).toMatchObject({ field: 'version.steps.0.delay_seconds' });
    expect(refusal([{ key: 'a', delay_seconds: 60, task: task(Q1, { deadline_seconds: 60 }) }])).toMatchObject({ field: 'version.steps.0.delay_seconds' });
    // The default deadline is 86400: the largest delay (86400) needs a longer one.
    expect(refusal([{ key: 'a', delay_seconds: 86400, task: task() }])).toMatchObject({ field: 'version.steps.0.delay_seconds' });
    expect(
      validateVersion({ steps: [{ key: 'a', delay_seconds: 86400, task: task(Q1, { deadline_seconds: 86401 }) }] } as WorkflowVersionInput).steps[0]!
        .delay_seconds,
    ).toBe(86400);
    expect(violations(CreateWorkflowBody, { name: 'w', version: { steps: [{ key: 'a', delay_seconds: 86401, task: task() }] } })[0]!.field).toBe(
      'version.steps.0.delay_seconds',
    );
  });

  it('use_run_key: not with a concurrency_key ("" is none); a run of such a version must name a key', () => {
    expect(refusal([{ key: 'a', task: task(Q1, { use_run_key: true, concurrency_key: 'object/1' }) }])).toMatchObject({
      field: 'version.steps.0.task.use_run_key',
    });
    const v = validateVersion({
      steps: [
        { key: 'a', task: task(Q1, { use_run_key: true, concurrency_key: '' }) },
        { key: 'b', task: task() },
      ],
    } as WorkflowVersionInput);
    expect(v.steps.map((s) => s.task?.use_run_key)).toEqual([true, false]);
    expect(v.steps[0]!.task).not.toHaveProperty('concurrency_key');
    expect(runKeyProblem(v.steps, undefined)?.details).toEqual({ field: 'concurrency_key', steps: ['a'] });
    expect(runKeyProblem(v.steps, 'object/1')).toBeNull();
    expect(runKeyProblem([v.steps[1]!], undefined)).toBeNull();
  });

  it('signal names unique; task fields under the rules of POST /v1/tasks, named by path', () => {
    expect(
      refusal([
        { key: 'a', signal: { name: 'x' } },
        { key: 'b', signal: { name: 'x' } },
      ]),
    ).toMatchObject({ field: 'version.steps.1.signal.name', steps: ['a', 'b'] });
    expect(refusal([{ key: 'a', task: task(Q1, { concurrency_key: ' x' }) }])).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'version.steps.0.task.concurrency_key',
    });
    expect(refusal([{ key: 'a', task: task(Q1, { business_key: '' }) }])).toMatchObject({ field: 'version.steps.0.task.business_key' });
    expect(violations(CreateWorkflowBody, { name: 'w', version: { steps: [{ key: 'a', task: { ...task(), payload: {} } }] } })[0]!.field).toBe(
      'version.steps.0.task.payload',
    );
    expect(violations(CreateWorkflowBody, { name: 'w', version: { steps: [{ key: 'A', task: task() }] } })[0]!.field).toBe('version.steps.0.key');
  });

  it('params: ≤ 64 KiB serialized (413 beyond), no number beyond ±2^53', () => {
    const big = 'x'.repeat(64 * 1024 - 2); // JSON "…" = 65536 bytes
    expect(validateVersion({ steps: [{ key: 'a', task: task(Q1, { params: big }) }] } as WorkflowVersionInput).steps[0]!.task!.params).toBe(big);
    expect(refusal([{ key: 'a', task: task(Q1, { params: big + 'x' }) }])).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', field: 'version.steps.0.task.params' });
    expect(refusal([{ key: 'a', task: task(Q1, { params: { n: 2 ** 60 } }) }])).toMatchObject({ field: 'version.steps.0.task.params.n' });
  });
});

describe('a published version: defaults and queues', () => {
  it('applies every default and derives the set of queues, each once, sorted', () => {
    const v = validateVersion({
      steps: [
        { key: 'fetch', task: task(Q2, { max_attempts: 5 }) },
        { key: 'split', after: ['fetch'], task: task(Q1) },
        { key: 'approve', after: ['split'], signal: { name: 'approved' } },
        { key: 'index', after: ['split', 'approve'], for_each: 'split', run_if: 'always', task: task(Q2) },
      ],
    } as WorkflowVersionInput);
    expect(v.queueIds).toEqual([Q1, Q2]);
    expect(v.steps[0]).toEqual({
      key: 'fetch',
      after: [],
      delay_seconds: 0,
      task: { ...task(Q2), priority: 0, max_attempts: 5, deadline_seconds: 86400, params: {}, use_run_key: false },
    });
    expect(v.steps[1]!.run_if).toBe('all_succeeded');
    expect(v.steps[2]).toEqual({ key: 'approve', after: ['split'], run_if: 'all_succeeded', signal: { name: 'approved', timeout_seconds: 86400 } });
    const stored = withQueueDefaults(v.steps, (q) => (q === Q1 ? 3 : 7));
    expect(stored.map((s) => s.task?.max_attempts)).toEqual([5, 3, undefined, 7]);
  });
});

describe('run start and signal bodies', () => {
  it('input ≤ 256 KiB, concurrency_key as in submit', () => {
    expect(normalizeRunStart({})).toEqual({ input: null, inputJson: 'null' });
    expect(normalizeRunStart({ input: { a: 1 }, version: 2, concurrency_key: 'object/42' })).toEqual({
      input: { a: 1 },
      inputJson: '{"a":1}',
      version: 2,
      concurrency_key: 'object/42',
    });
    expect(normalizeRunStart({ concurrency_key: '' })).not.toHaveProperty('concurrency_key');
    expect(() => normalizeRunStart({ concurrency_key: 'a\u0000' })).toThrow(/concurrency_key/);
    expect(() => normalizeRunStart({ input: 'x'.repeat(256 * 1024) })).toThrow(expect.objectContaining({ code: 'PAYLOAD_TOO_LARGE' }));
    expect(violations(StartWorkflowRunBody, { concurrency_key: null })[0]!.field).toBe('concurrency_key');
    expect(violations(StartWorkflowRunBody, { version: 0 })[0]!.field).toBe('version');
  });

  it('a signal payload ≤ 64 KiB; its name of [a-z0-9._-]', () => {
    expect(normalizeSignal({ name: 'approved' })).toEqual({ name: 'approved', payload: null, payloadJson: 'null' });
    expect(() => normalizeSignal({ name: 'a', payload: 'x'.repeat(64 * 1024) })).toThrow(
      expect.objectContaining({ code: 'PAYLOAD_TOO_LARGE', details: { field: 'payload' } }),
    );
    expect(violations(SendSignalBody, { name: 'Approved' })[0]!.field).toBe('name');
    expect(violations(SendSignalBody, { name: 'a', extra: 1 })[0]!.field).toBe('extra');
  });
});
