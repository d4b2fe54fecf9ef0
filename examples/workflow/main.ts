#!/usr/bin/env node
// Workflow example (docs/workflows.md): publishes a workflow of five steps
//
//   fetch ──▶ index (one task per fetched document) ──▶ approve (waits for the signal "approved")
//         ──▶ publish (reads index's outputs and the approval) ──▶ undo (compensation: runs only
//         if a step failed, so skipped here)
//
// starts a run, runs an SDK worker for the step handlers, sends the signal once the run waits for
// it, waits for the run to end and prints exactly one line:
//
//   run=SUCCEEDED steps=5 tasks=7 signal=consumed
//
// (5 steps; 7 tasks = fetch 1 + index 5 + publish 1, the signal step has none and the skipped
// compensation created none; the signal's payload became the approve step's output). Exits
// non-zero on any failure, within a 20 s deadline.
//
// Configuration (environment):
//   ORBIT_CREDENTIALS_FILE  the JSON file written by `npm start` / `orbit-admin bootstrap --worker-access`
//                           (default .orbit/dev.credentials.json); the credential needs the scopes
//                           workflows:manage, workflows:run, queues:manage and workers:*
//   ORBIT_URL               gateway URL (default: the file's "url")
//   ORBIT_TOKEN             bearer token (default: the file's "token")
import crypto from 'node:crypto';
import { createClient, OrbitApiError } from '@orbit/worker-sdk/client';
import { createWorker, stepHandler, type Worker } from '@orbit/worker-sdk/worker';
import { fail, readCredentials, runMain } from '../example-kit.js';

const DEADLINE_MS = 20_000;
const DOCUMENTS = 5;

/** The run's input and what the steps hand each other (docs/workflows.md "Runs": every step task's
 * payload is {input, params, parents, item?, index?}; stepHandler types it). */
interface Input {
  batch: string;
}
interface Doc {
  doc: number;
  batch: string;
}

async function main(): Promise<void> {
  const { url, token } = readCredentials();
  const client = createClient({ url, token });
  const tag = `${Date.now().toString(36)}-${crypto.randomBytes(4).toString('hex')}`;
  let worker: Worker | undefined;
  try {
    const queue = (await client.createQueue({ name: `workflow-example-${tag}` }, { idempotencyKey: `workflow-example-queue-${tag}` })).queue;
    // The run id of every step task a handler ran (7 expected, all of this run).
    const handled: string[] = [];
    worker = createWorker({
      url,
      token,
      queues: [queue.id],
      capacity: 8,
      logger: { info: () => {}, warn: () => {}, error: (o: object, m?: string) => console.error(m ?? '', o) },
      handlers: {
        // One task: the documents to index, an array (the for_each source of `index`).
        'doc.fetch': stepHandler<Input>(({ input, runId }) => {
          handled.push(runId);
          return Array.from({ length: DOCUMENTS }, (_, i): Doc => ({ doc: i + 1, batch: input.batch }));
        }),
        // One task per fetched document, in element order.
        'doc.index': stepHandler<Input, unknown, unknown, Doc>(({ item, index, runId }) => {
          handled.push(runId);
          return { indexed: item!.doc, position: index };
        }),
        // After the approval: the parents' outputs are the index step's array and the signal's payload.
        'doc.publish': stepHandler<Input, unknown, { index: unknown[]; approve: { by: string } }>(({ parents, runId }) => {
          handled.push(runId);
          return { published: parents.index.length, approved_by: parents.approve.by };
        }),
        'doc.undo': stepHandler(() => {
          throw new Error('the compensation step ran although no step failed');
        }),
      },
    });
    await worker.ready;

    const task = (handler: string) => ({ queue_id: queue.id, handler, handler_version: 'v1', payload_version: 'v1' });
    const created = await client.createWorkflow(
      {
        name: `publish-docs-${tag}`,
        version: {
          steps: [
            { key: 'fetch', task: task('doc.fetch') },
            { key: 'index', after: ['fetch'], for_each: 'fetch', task: task('doc.index') },
            { key: 'approve', after: ['index'], signal: { name: 'approved', timeout_seconds: 600 } },
            { key: 'publish', after: ['index', 'approve'], task: task('doc.publish') },
            { key: 'undo', after: ['publish'], run_if: 'any_failed', task: task('doc.undo') },
          ],
        },
      },
      { idempotencyKey: `workflow-example-create-${tag}` },
    );
    const started = await client.startWorkflowRun(created.workflow.id, { input: { batch: tag } }, { idempotencyKey: `workflow-example-run-${tag}` });
    const runId = started.run.id;

    // The run reaches the signal step once every document is indexed; then the approval is sent.
    let run = started.run;
    let signalled = false;
    while (!['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(run.state)) {
      await new Promise((r) => setTimeout(r, 50));
      run = await client.getWorkflowRun(runId);
      const approve = run.steps.find((s) => s.key === 'approve');
      if (!signalled && approve?.state === 'WAITING_SIGNAL') {
        await client.signalWorkflowRun(runId, { name: 'approved', payload: { by: 'example-reviewer' } }, { idempotencyKey: `workflow-example-signal-${tag}` });
        signalled = true;
      }
    }
    await worker.close({ timeoutMs: 5000 });

    const tasks = run.steps.reduce((n, s) => n + s.task_ids.length, 0);
    const approve = run.steps.find((s) => s.key === 'approve');
    const consumed = approve?.state === 'SUCCEEDED' && (approve.output as { by?: string } | undefined)?.by === 'example-reviewer';
    console.log(`run=${run.state} steps=${run.steps.length} tasks=${tasks} signal=${consumed ? 'consumed' : (approve?.state ?? 'missing')}`);
    // A run that did not succeed says which step failed and why (stderr; stdout keeps its one line).
    if (run.state !== 'SUCCEEDED')
      for (const s of run.steps) console.error(`step ${s.key}: ${s.state}${s.error ? ` ${s.error.code}: ${s.error.message}` : ''}`);
    const undo = run.steps.find((s) => s.key === 'undo');
    if (
      run.state !== 'SUCCEEDED' ||
      !consumed ||
      tasks !== DOCUMENTS + 2 ||
      handled.length !== tasks ||
      handled.some((id) => id !== runId) ||
      undo?.state !== 'SKIPPED'
    )
      process.exitCode = 1;
  } catch (err) {
    if (err instanceof OrbitApiError && err.code === 'PERMISSION_DENIED') {
      fail(
        `${err.message}: the credential needs workflows:manage and workflows:run (credentials made before workflows existed lack them; bootstrap a new one)`,
      );
    }
    throw err;
  } finally {
    await worker?.close({ timeoutMs: 1000 }).catch(() => {});
  }
}

runMain('workflow', main, DEADLINE_MS);
