// The console in a real headless Chromium against a real gateway and MariaDB with real data
// (docs/operations.md "Console"): sign-in, every page, pause/resume, a retire refused with its reasons then
// accepted, cancel, a hostile payload shown as text, a revoked token back to sign-in, idempotent
// retries, no console errors, no request to another host. ORBIT_CONSOLE_SCREENSHOTS=<dir> also
// writes a screenshot of each page (npm run screenshots → docs/console/).
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { useGatewayFixture } from './support/fixture.js';
import { call } from './support/http.js';
import { limitedCredential } from './support/contract.js';
import { DESKTOP, PHONE, goTo, screenshotDir, scrollsSideways, useConsoleBrowser } from './support/browser.js';
import { XSS, seedConsoleData, type ConsoleData } from './support/console-data.js';
import { makeEvents } from './support/events.js';

const f = useGatewayFixture();
let d: ConsoleData;
const { watched, open, signIn } = useConsoleBrowser(f);

beforeAll(async () => {
  d = await seedConsoleData(f);
});
afterAll(async () => {
  for (const w of f.workers.splice(0)) w.close();
});

const go = goTo;

async function queue(id: string): Promise<any> {
  return (await call(f.gw.url, 'GET', `/v1/queues/${id}`, { token: f.t.token })).body.data.queue;
}

const PAGES = (): [string, string, string][] => [
  ['overview', '#/overview', 'Connected workers'],
  ['queue', `#/queues/${d.orders.id}`, 'Queue orders'],
  ['tasks', '#/tasks', 'Business key'],
  ['task', `#/task/${d.review.id}`, 'Timeline'],
  ['resource-key', `#/key/${encodeURIComponent(d.key)}`, 'Token history'],
  ['workers', '#/workers', 'worker-orders-1'],
  ['subscriptions', '#/subscriptions', 'slots used'],
  ['subscription', `#/subscriptions/${d.ordersSub.id}`, 'Delivery history'],
  ['schedules', '#/schedules', 'nightly-reindex'],
  ['schedule', `#/schedules/${d.schedule.id}`, 'Fire history'],
  ['access', '#/access', 'Subscription slots'],
];

describe('console in Chromium', () => {
  it('renders the sign-in page and signs in with a pasted token kept only in sessionStorage', async () => {
    const { page, requests } = await open();
    await page.goto(`${f.gw.url}/console/`);
    await page.locator('input[name=token]').waitFor();
    // Time since the navigation started, measured by the page itself (not the driver's round trips).
    // Reported, not asserted tightly: a timed assertion fails on a loaded 2-core CI machine for
    // reasons that are not the console's (measured 90-400 ms idle, 1 030 ms with the suite's load);
    // the bound only catches a page that hangs.
    const firstRenderMs = await page.evaluate(() => performance.now());
    process.stderr.write(`console first render: ${Math.round(firstRenderMs)} ms\n`);
    expect(firstRenderMs).toBeLessThan(15_000);
    await signIn(page);
    await page.getByText(f.t.namespace_id).waitFor();
    for (const name of ['orders', 'billing', 'reports', 'initial']) await page.getByRole('link', { name, exact: true }).waitFor();
    const storage = await page.evaluate(() => ({ session: { ...sessionStorage }, local: { ...localStorage }, url: location.href }));
    expect(Object.values(storage.session)).toContain(f.t.token);
    expect(JSON.stringify(storage.local)).not.toContain(f.t.token);
    expect(storage.url).not.toContain(f.t.token);
    expect(requests.map((r) => r.url()).join('\n')).not.toContain(f.t.token);
  });

  it('renders every page with real data at 1280×800 and 390×844 without horizontal scrolling', async () => {
    const shots = screenshotDir();
    for (const viewport of [DESKTOP, PHONE]) {
      const { page } = await open(viewport);
      await signIn(page);
      for (const [name, hash, ready] of PAGES()) {
        await go(page, hash, ready);
        expect(await scrollsSideways(page), `${name} at ${viewport.width}px scrolls sideways`).toBe(false);
        if (shots) await page.screenshot({ path: path.join(shots, `${name}${viewport === PHONE ? '-phone' : ''}.png`), fullPage: viewport === DESKTOP });
      }
    }
  });

  it('shows the key holder with its fencing token, the waiting task and the review task', async () => {
    const { page } = await open();
    await signIn(page);
    await go(page, `#/key/${encodeURIComponent(d.key)}`, 'Token history');
    await expect.poll(() => page.locator('[data-holder-token]').textContent()).toBe(d.holder.token);
    await page.locator(`a[data-task="${d.waitingKeyed.id}"]`).waitFor();
    await go(page, `#/task/${d.review.id}`, 'Timeline');
    await page.getByText('NEEDS_REVIEW').first().waitFor();
    await page.getByText('worker lost the connection to the resource').first().waitFor();
  });

  it('pauses and resumes a queue', async () => {
    const { page } = await open();
    await signIn(page);
    await go(page, `#/queues/${d.orders.id}`, 'Queue orders');
    await page.click('[data-act=pause]');
    await page.locator('[data-act=resume]').waitFor();
    expect((await queue(d.orders.id)).paused).toBe(true);
    await page.click('[data-act=resume]');
    await page.locator('[data-act=pause]').waitFor();
    expect((await queue(d.orders.id)).paused).toBe(false);
  });

  it('pauses, resumes and triggers a schedule', async () => {
    const { page } = await open();
    await signIn(page);
    await go(page, `#/schedules/${d.schedule.id}`, 'Fire history');
    const sched = async () => (await call(f.gw.url, 'GET', `/v1/schedules/${d.schedule.id}`, { token: f.t.token })).body.data.schedule;
    await page.click('[data-act=pause]');
    await page.locator('[data-act=resume]').waitFor();
    expect((await sched()).paused).toBe(true);
    await page.click('[data-act=resume]');
    await page.locator('[data-act=pause]').waitFor();
    expect((await sched()).paused).toBe(false);
    await page.click('[data-act=trigger]');
    await page.getByText('Trigger: done').waitFor();
    const tasks = await call(f.gw.url, 'GET', `/v1/tasks?queue_id=${d.orders.id}&limit=500`, { token: f.t.token });
    const made = tasks.body.data.tasks.filter((t: any) => t.schedule_id === d.schedule.id);
    expect(made).toHaveLength(1);
    expect(made[0]).toMatchObject({ handler: 'index.rebuild', concurrency_key: 'index/main', schedule_version: 1 });
  });

  it('a retire is refused with every reason and count, then accepted once the queue is drained', async () => {
    const { page } = await open();
    await signIn(page);
    // The retire dialog of the page shown: open, give the reason, submit.
    const retire = async (reason: string) => {
      await page.click('[data-act=retire-open]');
      await page.fill('input[name=reason]', reason);
      await page.click('[data-act=retire]');
    };
    const retired = async () => {
      await page.getByText('Retire: done').waitFor();
      await page.locator('.card-h .badge', { hasText: 'retired' }).waitFor();
    };
    await go(page, `#/queues/${d.reports.id}`, 'Queue reports');
    await retire('reports moved elsewhere');
    const alert = page.getByRole('alert');
    await alert.getByText('RESOURCE_BUSY').waitFor();
    await alert.getByText('unfinished_tasks').waitFor();
    await alert.getByText('subscriptions').first().waitFor();
    expect(await alert.textContent()).toMatch(/request_id: [0-9a-f]{32}/);
    expect((await queue(d.reports.id)).retired_at).toBeUndefined();
    // Drain through the console: cancel the task, retire the subscription, then the queue.
    await go(page, `#/task/${d.reportsTask.id}`, 'Timeline');
    await page.click('[data-act=cancel]');
    await page.getByText('CANCELLED').first().waitFor();
    await go(page, `#/subscriptions/${d.reportsSub.id}`, 'Delivery history');
    await retire('feed replaced');
    await retired();
    await go(page, `#/queues/${d.reports.id}`, 'Queue reports');
    await retire('reports moved elsewhere');
    await retired();
    expect((await queue(d.reports.id)).retired_at).toBeDefined();
  });

  // Task commands from the Task page: cancel (WAITING) and resolve (NEEDS_REVIEW).
  const TASK_COMMANDS = [
    {
      name: 'cancels a task',
      task: () => d.cancelTarget,
      input: (p: Page) => p.fill('input[name=reason]', 'no longer needed'),
      act: 'cancel',
      done: 'Cancel: done',
      state: 'CANCELLED',
    },
    {
      name: 'resolves a task in review',
      task: () => d.review,
      input: (p: Page) => p.selectOption('select[name=resolution]', 'failed'),
      act: 'resolve',
      done: 'Resolve: done',
      state: 'FAILED',
    },
  ];
  for (const c of TASK_COMMANDS) {
    it(c.name, async () => {
      const { page } = await open();
      await signIn(page);
      await go(page, `#/task/${c.task().id}`, 'Timeline');
      await c.input(page);
      await page.click(`[data-act=${c.act}]`);
      await page.getByText(c.done).waitFor();
      const t = (await call(f.gw.url, 'GET', `/v1/tasks/${c.task().id}`, { token: f.t.token })).body.data.task;
      expect(t.state).toBe(c.state);
    });
  }

  it('renders a hostile payload as text: no element created, no script run, no request made', async () => {
    const { page, requests } = await open();
    await signIn(page);
    await go(page, `#/task/${d.xss.id}`, 'Timeline');
    await page.getByText(XSS).first().waitFor();
    expect(await page.locator('pre.json').first().textContent()).toContain(XSS);
    await go(page, '#/tasks', 'Business key');
    await page.getByText(XSS).first().waitFor();
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.evaluate(() => document.querySelectorAll('[onerror]').length)).toBe(0);
    expect(requests.filter((r) => /\/x$/.test(new URL(r.url()).pathname))).toEqual([]);
  });

  it('a double click sends one command; a retry after a network error reuses the Idempotency-Key and runs once', async () => {
    const { page, requests } = await open();
    await signIn(page);
    const before = await queue(d.billing.id);
    await go(page, `#/queues/${d.billing.id}`, 'Queue billing');
    let aborted = 0;
    await page.route(`**/v1/queues/${d.billing.id}:resume`, async (route) => {
      // The first send reaches the server and commits, but its answer is lost on the way back.
      if (aborted++ === 0) {
        await route.fetch();
        return route.abort('connectionreset');
      }
      return route.continue();
    });
    await page.dblclick('[data-act=resume]');
    await page.locator('.error .code', { hasText: 'NETWORK' }).waitFor();
    await page.getByRole('button', { name: 'Retry' }).click();
    await page.locator('[data-act=pause]').waitFor();
    const sent = requests.filter((r) => r.method() === 'POST' && r.url().endsWith(':resume'));
    const keys = await Promise.all(sent.map((r) => r.headerValue('idempotency-key')));
    // One send for the double click, one for the retry, both with the key of this one action.
    expect(keys).toHaveLength(2);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^console-[0-9a-f-]{36}$/);
    const after = await queue(d.billing.id);
    expect(after.paused).toBe(false);
    expect(BigInt(after.revision)).toBe(BigInt(before.revision) + 1n);
  });

  it('a revoked token is sent back to sign-in and forgotten', async () => {
    const cred = await limitedCredential(f.db, f.t.namespace_id, ['tasks:read', 'queues:manage']);
    const { page } = await open();
    await signIn(page, cred.token);
    await page.getByText('orders').first().waitFor();
    await f.db.pool.query('UPDATE credentials SET revoked_at = UTC_TIMESTAMP(3) WHERE id = ?', [cred.id]);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.locator('input[name=token]').waitFor();
    await page.getByText('UNAUTHENTICATED').waitFor();
    expect(await page.evaluate(() => JSON.stringify({ ...sessionStorage }))).not.toContain(cred.token);
  });

  it('disables commands the credential lacks the scope for', async () => {
    const cred = await limitedCredential(f.db, f.t.namespace_id, ['tasks:read', 'queues:manage']);
    const { page } = await open();
    await signIn(page, cred.token);
    await go(page, `#/task/${d.waitingKeyed.id}`, 'Timeline');
    expect(await page.locator('[data-act=cancel]').isDisabled()).toBe(true);
    expect(await page.locator('[data-act=cancel]').getAttribute('title')).toContain('tasks:submit');
  });

  it('Application access: no snippet until a queue is chosen; the choice (its id only) is remembered', async () => {
    const { page } = await open();
    await signIn(page);
    await go(page, '#/access', 'Subscription slots');
    expect(await page.locator('[data-snippet]').count()).toBe(0);
    await page.selectOption('select[name=access_queue]', d.orders.id);
    expect(await page.locator('[data-snippet=curl]').textContent()).toContain(`"queue_id":"${d.orders.id}"`);
    expect(await page.locator('[data-snippet=sdk]').textContent()).toContain(`queues: ['${d.orders.id}']`);
    const snippets = (await page.locator('[data-snippet]').allTextContents()).join('\n');
    for (const other of [d.billing.id, d.reports.id, f.t.queue_id]) expect(snippets).not.toContain(other);
    const shots = screenshotDir();
    if (shots) await page.screenshot({ path: path.join(shots, 'access-selected.png'), fullPage: true });
    await page.reload();
    await page.locator('[data-selected-queue]').waitFor();
    expect(await page.locator('[data-selected-queue]').textContent()).toBe(d.orders.id);
    const local = await page.evaluate(() => ({ ...localStorage }));
    expect(Object.values(local)).toContain(d.orders.id);
    expect(JSON.stringify(local)).not.toContain(f.t.token);
  });

  it('Tasks: filters by queue and state, pages with the cursor', async () => {
    const archive = (await call(f.gw.url, 'POST', '/v1/queues', { token: f.t.token, key: `archive-${d.orders.id}`, body: { name: 'archive' } })).body.data
      .queue;
    await makeEvents(f.db.pool, f.t, archive.id, 60, 'task.succeeded');
    const { page } = await open();
    await signIn(page);
    await go(page, '#/tasks', 'Business key');
    await page.selectOption('select[name=queue_id]', archive.id);
    await page.selectOption('select[name=state]', 'SUCCEEDED');
    await page.click('form.filters button[type=submit]');
    await page.getByText('page 1').waitFor();
    await expect.poll(() => page.locator('a[data-task]').count()).toBe(50);
    await page.click('[data-act=next-page]');
    await page.getByText('page 2').waitFor();
    await expect.poll(() => page.locator('a[data-task]').count()).toBe(10);
    expect(await page.locator('[data-act=next-page]').isDisabled()).toBe(true);
    await page.selectOption('select[name=state]', 'WAITING');
    await page.click('form.filters button[type=submit]');
    await page.getByText('No tasks match.').waitFor();
  });

  it('auto-refresh shows a change made elsewhere within seconds; switched off it does not', async () => {
    const { page } = await open();
    await signIn(page);
    await go(page, `#/queues/${d.orders.id}`, 'Queue orders');
    await page.locator('[data-act=pause]').waitFor();
    const q = await queue(d.orders.id);
    await call(f.gw.url, 'POST', `/v1/queues/${q.id}:pause`, { token: f.t.token, key: `elsewhere-${q.revision}`, body: { expected_revision: q.revision } });
    await page.locator('[data-act=resume]').waitFor({ timeout: 10_000 });
    await page.uncheck('input[name=autorefresh]');
    const p = await queue(d.orders.id);
    await call(f.gw.url, 'POST', `/v1/queues/${p.id}:resume`, { token: f.t.token, key: `elsewhere-${p.revision}`, body: { expected_revision: p.revision } });
    await page.waitForTimeout(3000);
    expect(await page.locator('[data-act=resume]').count()).toBe(1);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.locator('[data-act=pause]').waitFor();
  });

  it('no page logged a console error, ran a dialog or asked another host for anything', () => {
    expect(watched.length).toBeGreaterThan(5);
    expect(watched.flatMap((w) => w.problems)).toEqual([]);
    // Chromium logs every /v1 error answer; each must be one the tests provoked on purpose.
    for (const line of watched.flatMap((w) => w.apiRefusals)) {
      expect(line).toMatch(/status of (400|401|403|404|409)|ERR_CONNECTION_RESET/);
    }
  });
});
