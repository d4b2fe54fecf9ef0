// Contract of the workflow version validation (docs/workflows.md "Definitions and versions", "Endpoints") with raw HTTP
// against a real gateway: every 400 of a version body, with details.field and details.steps, and
// nothing written. Create, publish, retire, reads, receipts and scopes: workflows-http-defs.test.ts.
import { describe, expect, it } from 'vitest';
import { call } from './support/http.js';
import { expectError } from './support/contract.js';
import { chain, createWorkflow, newWorkflow, stepTask, workflowCommand, workflowName, useWorkflowsFixture } from './support/workflows.js';

const { f, api, definitionRows } = useWorkflowsFixture();

describe('version validation through HTTP (400 with details.field and details.steps, nothing written)', () => {
  const q = () => f.t.queue_id;
  const t = (over: Record<string, unknown> = {}) => stepTask(q(), over);
  const cases: [string, () => unknown, number, string, string, string[] | undefined][] = [
    // [what, version, status, code, field, steps]
    ['0 steps', () => ({ steps: [] }), 400, 'INVALID_ARGUMENT', 'version.steps', undefined],
    ['51 steps', () => ({ steps: Array.from({ length: 51 }, (_, i) => ({ key: `s${i}`, task: t() })) }), 400, 'INVALID_ARGUMENT', 'version.steps', undefined],
    [
      'duplicate keys',
      () => ({
        steps: [
          { key: 'a', task: t() },
          { key: 'a', task: t() },
        ],
      }),
      400,
      'INVALID_ARGUMENT',
      'version.steps.1.key',
      ['a'],
    ],
    ['both task and signal', () => ({ steps: [{ key: 'a', task: t(), signal: { name: 's' } }] }), 400, 'INVALID_ARGUMENT', 'version.steps.0', ['a']],
    ['neither task nor signal', () => ({ steps: [{ key: 'a' }] }), 400, 'INVALID_ARGUMENT', 'version.steps.0', ['a']],
    [
      'unknown after key',
      () => ({
        steps: [
          { key: 'a', task: t() },
          { key: 'b', after: ['zz'], task: t() },
        ],
      }),
      400,
      'INVALID_ARGUMENT',
      'version.steps.1.after.0',
      ['b', 'zz'],
    ],
    ['after itself', () => ({ steps: [{ key: 'a', after: ['a'], task: t() }] }), 400, 'INVALID_ARGUMENT', 'version.steps.0.after.0', ['a']],
    [
      'after listed twice',
      () => ({
        steps: [
          { key: 'a', task: t() },
          { key: 'b', after: ['a', 'a'], task: t() },
        ],
      }),
      400,
      'INVALID_ARGUMENT',
      'version.steps.1.after.1',
      ['b', 'a'],
    ],
    [
      'a cycle, named',
      () => ({
        steps: [
          { key: 'r', task: t() },
          { key: 'x', after: ['r', 'z'], task: t() },
          { key: 'y', after: ['x'], task: t() },
          { key: 'z', after: ['y'], task: t() },
        ],
      }),
      400,
      'INVALID_ARGUMENT',
      'version.steps.1.after',
      ['x', 'y', 'z'],
    ],
    ['run_if on a root', () => ({ steps: [{ key: 'a', run_if: 'always', task: t() }] }), 400, 'INVALID_ARGUMENT', 'version.steps.0.run_if', ['a']],
    [
      'duplicate signal names',
      () => ({
        steps: [
          { key: 'a', signal: { name: 'go' } },
          { key: 'b', signal: { name: 'go' } },
        ],
      }),
      400,
      'INVALID_ARGUMENT',
      'version.steps.1.signal.name',
      ['a', 'b'],
    ],
    [
      'for_each not a parent',
      () => ({
        steps: [
          { key: 'a', task: t() },
          { key: 'b', task: t() },
          { key: 'c', after: ['a'], for_each: 'b', task: t() },
        ],
      }),
      400,
      'INVALID_ARGUMENT',
      'version.steps.2.for_each',
      ['c'],
    ],
    [
      'for_each over a signal step',
      () => ({
        steps: [
          { key: 'a', signal: { name: 'go' } },
          { key: 'c', after: ['a'], for_each: 'a', task: t() },
        ],
      }),
      400,
      'INVALID_ARGUMENT',
      'version.steps.1.for_each',
      ['c', 'a'],
    ],
    [
      'for_each on a signal step',
      () => ({
        steps: [
          { key: 'a', task: t() },
          { key: 'b', after: ['a'], for_each: 'a', signal: { name: 'go' } },
        ],
      }),
      400,
      'INVALID_ARGUMENT',
      'version.steps.1.for_each',
      ['b'],
    ],
    [
      'delay on a signal step',
      () => ({ steps: [{ key: 'a', delay_seconds: 5, signal: { name: 'go' } }] }),
      400,
      'INVALID_ARGUMENT',
      'version.steps.0.delay_seconds',
      ['a'],
    ],
    [
      'delay not below the deadline',
      () => ({ steps: [{ key: 'a', delay_seconds: 60, task: t({ deadline_seconds: 60 }) }] }),
      400,
      'INVALID_ARGUMENT',
      'version.steps.0.delay_seconds',
      ['a'],
    ],
    [
      'use_run_key with concurrency_key',
      () => ({ steps: [{ key: 'a', task: t({ use_run_key: true, concurrency_key: 'k' }) }] }),
      400,
      'INVALID_ARGUMENT',
      'version.steps.0.task.use_run_key',
      undefined,
    ],
    ['unknown key in a step', () => ({ steps: [{ key: 'a', task: t(), colour: 'red' }] }), 400, 'INVALID_ARGUMENT', 'version.steps.0.colour', undefined],
    ['unknown key in a task', () => ({ steps: [{ key: 'a', task: t({ payload: {} }) }] }), 400, 'INVALID_ARGUMENT', 'version.steps.0.task.payload', undefined],
    ['unknown key in the version', () => ({ steps: [{ key: 'a', task: t() }], name: 'x' }), 400, 'INVALID_ARGUMENT', 'version.name', undefined],
    ['a key outside [a-z0-9._-]', () => ({ steps: [{ key: 'A', task: t() }] }), 400, 'INVALID_ARGUMENT', 'version.steps.0.key', undefined],
    [
      'a bad submit field (priority)',
      () => ({ steps: [{ key: 'a', task: t({ priority: 10 }) }] }),
      400,
      'INVALID_ARGUMENT',
      'version.steps.0.task.priority',
      undefined,
    ],
    [
      'params over 64 KiB',
      () => ({ steps: [{ key: 'a', task: t({ params: { s: 'x'.repeat(65_536) } }) }] }),
      413,
      'PAYLOAD_TOO_LARGE',
      'version.steps.0.task.params',
      undefined,
    ],
    [
      'params with a number beyond 2^53',
      () => ({ steps: [{ key: 'a', task: t({ params: { n: 2 ** 60 } }) }] }),
      400,
      'INVALID_ARGUMENT',
      'version.steps.0.task.params.n',
      undefined,
    ],
  ];
  for (const [what, version, status, code, field, steps] of cases) {
    it(`${what} → ${status} ${code} at ${field}`, async () => {
      const before = await definitionRows();
      const e = expectError(await createWorkflow(api(), { name: workflowName(), version: version() }), status, code);
      expect(e.details?.field).toBe(field);
      if (steps) expect(e.details?.steps).toEqual(steps);
      if (what === 'a cycle, named') expect(e.message).toContain('x -> y -> z -> x');
      // The same version is refused the same way by a publish.
      const { workflow } = await newWorkflow(api(), chain(q()));
      const rows = await definitionRows();
      const p = expectError(await workflowCommand(api(), workflow.id, 'versions', { expected_revision: '1', version: version() }), status, code);
      expect(p.details?.field).toBe(field);
      expect(await definitionRows()).toEqual(rows);
      expect(rows[0]).toBe(before[0]! + 1);
    });
  }

  it('a bad name is 400 at name; a missing body field is 400', async () => {
    expect(expectError(await createWorkflow(api(), { name: 'Bad Name', version: chain(q()) }), 400, 'INVALID_ARGUMENT').details?.field).toBe('name');
    expectError(await createWorkflow(api(), { name: workflowName() }), 400, 'INVALID_ARGUMENT');
    expectError(
      await call(f.gw.url, 'POST', '/v1/workflows', { token: f.t.token, body: { name: workflowName(), version: chain(q()) } }),
      400,
      'INVALID_ARGUMENT',
    );
  });
});
