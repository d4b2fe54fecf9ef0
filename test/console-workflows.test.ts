// The console's Workflows page in a real headless Chromium against a real gateway and MariaDB, with a
// real worker socket running the step tasks (docs/operations.md "Console": a workflow run's graph following
// its steps to the end and a signal sent from the page): the definition listed, a run started from
// the page, its graph's states following the run, a signal sent from the page turning its step
// SUCCEEDED and the run to its end; pause, resume and cancel of another run; a publish refused at the
// field with the steps it names, then accepted; commands disabled without the workflows scopes; a
// hostile input shown as text; no console error, no request to another host.
// ORBIT_CONSOLE_SCREENSHOTS=<dir> also writes the page's screenshots (npm run screenshots).
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { limitedCredential } from './support/contract.js';
import { createQueue } from './support/dispatch-fixture.js';
import { autoWorker, type AutoWorker } from './support/auto-worker.js';
import { DESKTOP, PHONE, goTo, screenshotDir, scrollsSideways, useConsoleBrowser } from './support/browser.js';
import { XSS } from './support/console-data.js';

const f = useGatewayFixture();
let worker: AutoWorker;
let wf: any;
let queueId: string;
const { watched, open, signIn } = useConsoleBrowser(f);

const task = (handler: string) => ({ queue_id: queueId, handler, handler_version: 'v1', payload_version: 'v1' });
/** fetch → approve (signal) → publish, and undo: compensation that runs only when a step failed. */
const STEPS = () => [
  { key: 'fetch', task: { ...task('doc.fetch'), params: { mode: 'full' } } },
  { key: 'approve', after: ['fetch'], signal: { name: 'approved', timeout_seconds: 3600 } },
  { key: 'publish', after: ['approve'], task: task('doc.publish') },
  { key: 'undo', after: ['publish'], run_if: 'any_failed', task: task('doc.undo') },
];

const api = (method: 'GET' | 'POST', p: string, body?: unknown) =>
  call(f.gw.url, method, p, { token: f.t.token, key: method === 'POST' ? ikey('wf') : undefined, body });
async function run(id: string): Promise<any> {
  return (await api('GET', `/v1/workflow-runs/${id}`)).body.data.run;
}
async function startRun(input: unknown): Promise<any> {
  const r = await api('POST', `/v1/workflows/${wf.id}/runs`, { input });
  if (r.status !== 201) throw new Error(r.text);
  return r.body.data.run;
}

beforeAll(async () => {
  queueId = (await createQueue(f, { name: 'documents', lease_seconds: 600 })).id;
  const created = await api('POST', '/v1/workflows', { name: 'doc-pipeline', version: { steps: STEPS() } });
  if (created.status !== 201) throw new Error(created.text);
  wf = created.body.data.workflow;
  worker = await autoWorker(f.gw.url, f.t, [queueId], 8);
});
afterAll(async () => {
  worker?.close();
});

const go = goTo;

/** The state the graph shows for a step. */
const drawn = (page: Page, step: string) => page.locator(`[data-graph] [data-step="${step}"]`).getAttribute('data-state');

describe('console Workflows page in Chromium', () => {
  it('lists the definition, starts a run from the page, follows its graph, and a signal from the page finishes it', async () => {
    const { page } = await open();
    await signIn(page);
    await go(page, '#/workflows', 'Runs');
    await page.getByRole('link', { name: 'doc-pipeline', exact: true }).click();
    await page.getByText('Start a run').waitFor();
    // The definition's current version drawn: four boxes, three edges.
    await expect.poll(() => page.locator('[data-graph]').first().locator('[data-step]').count()).toBe(4);
    expect(await page.locator('[data-graph]').first().locator('[data-edge]').count()).toBe(3);
    await page.fill('textarea[name=run_input]', JSON.stringify({ doc: 42, note: XSS }));
    await page.click('[data-act=start-run]');
    // The page moves to the run it started.
    await page.waitForFunction(() => /^#\/workflow-runs\/[0-9a-f]{32}$/.test(location.hash));
    const runId = (await page.evaluate(() => location.hash)).split('/').pop()!;
    await page.getByText('Workflow run').first().waitFor();
    // The worker runs fetch; the run then waits for the signal (auto-refresh follows it).
    await expect.poll(() => drawn(page, 'fetch'), { timeout: 15_000 }).toBe('SUCCEEDED');
    await expect.poll(() => drawn(page, 'approve'), { timeout: 15_000 }).toBe('WAITING_SIGNAL');
    expect(await drawn(page, 'publish')).toBe('PENDING');
    // A step's tasks link to the Task page; its output is shown.
    await page.locator('[data-graph] [data-step="fetch"]').click();
    const detail = page.locator('[data-step-detail="fetch"]');
    const fetchTask = (await run(runId)).steps.find((s: any) => s.key === 'fetch').task_ids[0];
    expect(await detail.locator(`a[data-task="${fetchTask}"]`).getAttribute('href')).toBe(`#/task/${fetchTask}`);
    await detail.getByText(f.t.application_id).waitFor();
    // The input is shown as text: the hostile string, no element made of it.
    await page.getByText(XSS).first().waitFor();
    expect(await page.locator('img').count()).toBe(0);

    await page.selectOption('select[name=signal_name]', 'approved');
    await page.fill('textarea[name=signal_payload]', JSON.stringify({ by: 'reviewer-7' }));
    await page.click('[data-act=signal]');
    await page.getByText('Signal: done').waitFor();
    await expect.poll(() => drawn(page, 'approve'), { timeout: 15_000 }).toBe('SUCCEEDED');
    await expect.poll(() => drawn(page, 'publish'), { timeout: 15_000 }).toBe('SUCCEEDED');
    expect(await drawn(page, 'undo')).toBe('SKIPPED');
    await page.locator('.card-h .badge', { hasText: 'SUCCEEDED' }).waitFor();
    expect(await page.locator('[data-signal-payload=approved]').textContent()).toBe('{"by":"reviewer-7"}');
    const r = await run(runId);
    expect(r.state).toBe('SUCCEEDED');
    expect(r.input).toEqual({ doc: 42, note: XSS });
    expect(r.steps.map((s: any) => [s.key, s.state])).toEqual([
      ['fetch', 'SUCCEEDED'],
      ['approve', 'SUCCEEDED'],
      ['publish', 'SUCCEEDED'],
      ['undo', 'SKIPPED'],
    ]);
    expect(r.steps.find((s: any) => s.key === 'approve').output).toEqual({ by: 'reviewer-7' });
    // The finished run is listed under its state.
    await go(page, `#/workflows?state=SUCCEEDED`, 'Runs');
    await page.locator(`a[data-run="${runId}"]`).waitFor();
  });

  it('pauses, resumes and cancels a run from the page', async () => {
    const started = await startRun({ doc: 7 });
    const { page } = await open();
    await signIn(page);
    await go(page, `#/workflow-runs/${started.id}`, 'Signals');
    await expect.poll(() => drawn(page, 'approve'), { timeout: 15_000 }).toBe('WAITING_SIGNAL');
    await page.click('[data-act=pause-run]');
    await page.locator('[data-act=resume-run]').waitFor();
    expect((await run(started.id)).state).toBe('PAUSED');
    await page.click('[data-act=resume-run]');
    await page.locator('[data-act=pause-run]').waitFor();
    expect((await run(started.id)).state).toBe('RUNNING');
    await page.click('[data-act=cancel-run-open]');
    await page.fill('input[name=run_reason]', 'superseded by run 8');
    await page.click('[data-act=cancel-run]');
    await page.getByText('Cancel: done').waitFor();
    await page.locator('.card-h .badge', { hasText: 'CANCELLED' }).waitFor();
    const r = await run(started.id);
    expect(r.state).toBe('CANCELLED');
    expect(r.steps.map((s: any) => s.state)).toEqual(['SUCCEEDED', 'CANCELLED', 'CANCELLED', 'CANCELLED']);
    // A final run's commands are disabled and say why.
    expect(await page.locator('[data-act=signal]').isDisabled()).toBe(true);
    expect(await page.locator('[data-act=pause-run]').getAttribute('title')).toContain('CANCELLED');
  });

  it('a publish refused shows the field and flags the steps it names; a valid one becomes version 2', async () => {
    const { page } = await open();
    await signIn(page);
    await go(page, `#/workflows/${wf.id}`, 'Publish a new version');
    const cyclic = {
      steps: [
        ...STEPS()
          .slice(0, 3)
          .map((s) => (s.key === 'fetch' ? { ...s, after: ['publish'] } : s)),
      ],
    };
    await page.fill('textarea[name=version]', JSON.stringify(cyclic, null, 2));
    await page.click('[data-act=publish]');
    const err = page.locator('[data-field-error]');
    await err.waitFor();
    expect(await err.textContent()).toMatch(/field version\.steps/);
    expect(await err.textContent()).toContain('fetch');
    // The preview draws the edited steps and flags the ones the refusal names.
    await expect.poll(() => page.locator('[data-graph] .wf-node.flagged').count()).toBeGreaterThan(0);
    expect((await api('GET', `/v1/workflows/${wf.id}`)).body.data.workflow.current_version).toBe(1);
    const next = { steps: [...STEPS(), { key: 'notify', after: ['publish'], task: task('doc.notify') }] };
    await page.fill('textarea[name=version]', JSON.stringify(next, null, 2));
    await page.click('[data-act=publish]');
    await page.getByText('Publish: done').waitFor();
    await page.locator('[data-version="2"]').waitFor();
    const w = (await api('GET', `/v1/workflows/${wf.id}`)).body.data.workflow;
    expect(w.current_version).toBe(2);
    const v2 = (await api('GET', `/v1/workflows/${wf.id}/versions/2`)).body.data.version;
    expect(v2.steps.map((s: any) => s.key)).toEqual(['fetch', 'approve', 'publish', 'undo', 'notify']);
  });

  it('disables the commands the credential lacks the workflows scopes for', async () => {
    const cred = await limitedCredential(f.db, f.t.namespace_id, ['tasks:read', 'queues:manage']);
    const started = await startRun({ doc: 9 });
    const { page } = await open();
    await signIn(page, cred.token);
    await go(page, `#/workflows/${wf.id}`, 'Start a run');
    expect(await page.locator('[data-act=start-run]').isDisabled()).toBe(true);
    expect(await page.locator('[data-act=start-run]').getAttribute('title')).toContain('workflows:run');
    expect(await page.locator('[data-act=publish]').getAttribute('title')).toContain('workflows:manage');
    await go(page, `#/workflow-runs/${started.id}`, 'Signals');
    for (const act of ['pause-run', 'cancel-run-open', 'signal']) {
      expect(await page.locator(`[data-act=${act}]`).isDisabled(), act).toBe(true);
    }
    // With workflows:run only, run commands are enabled and publishing is not.
    const runner = await limitedCredential(f.db, f.t.namespace_id, ['tasks:read', 'workflows:run']);
    const p2 = (await open()).page;
    await signIn(p2, runner.token);
    await go(p2, `#/workflows/${wf.id}`, 'Start a run');
    expect(await p2.locator('[data-act=start-run]').isDisabled()).toBe(false);
    expect(await p2.locator('[data-act=publish]').isDisabled()).toBe(true);
    await api('POST', `/v1/workflow-runs/${started.id}:cancel`, { reason: 'test over' });
  });

  it('renders the pages at 1280×800 and 390×844 without horizontal scrolling', async () => {
    const shown = await startRun({ doc: 'screenshot' });
    await expect.poll(async () => (await run(shown.id)).steps[1].state, { timeout: 15_000 }).toBe('WAITING_SIGNAL');
    const shots = screenshotDir();
    const pages: [string, string, string][] = [
      ['workflows', '#/workflows', 'doc-pipeline'],
      ['workflow', `#/workflows/${wf.id}`, 'Publish a new version'],
      ['workflow-run', `#/workflow-runs/${shown.id}`, 'Signals'],
    ];
    for (const viewport of [DESKTOP, PHONE]) {
      const { page } = await open(viewport);
      await signIn(page);
      for (const [name, hash, ready] of pages) {
        await go(page, hash, ready);
        if (name === 'workflow-run') await page.locator('[data-graph] [data-step="approve"][data-state="WAITING_SIGNAL"]').waitFor();
        expect(await scrollsSideways(page), `${name} at ${viewport.width}px scrolls sideways`).toBe(false);
        if (shots) await page.screenshot({ path: path.join(shots, `${name}${viewport === PHONE ? '-phone' : ''}.png`), fullPage: viewport === DESKTOP });
      }
    }
  });

  it('no page logged a console error, ran a dialog or asked another host for anything', () => {
    expect(watched.length).toBeGreaterThan(3);
    expect(watched.flatMap((w) => w.problems)).toEqual([]);
    for (const line of watched.flatMap((w) => w.apiRefusals)) expect(line).toMatch(/status of (400|403)/);
    expect(worker.errors).toEqual([]);
  });
});
