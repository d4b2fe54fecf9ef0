// Real headless Chromium (Debian's `chromium`, driven by playwright-core) for the console tests.
// One persistent context per file on a fresh profile directory; every page it opens is watched for
// console errors, uncaught exceptions, dialogs (an executed alert) and requests to any host other
// than the gateway's. A failing test keeps a screenshot (path printed in the failure).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, onTestFailed } from 'vitest';
import { chromium, type BrowserContext, type Page, type Request } from 'playwright-core';

export const CHROMIUM = process.env.ORBIT_CHROMIUM ?? '/usr/bin/chromium';
export const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

export interface Watched {
  page: Page;
  /** Console errors, page errors, dialogs and requests to other hosts seen so far. */
  problems: string[];
  /** Chromium's own log line for each /v1 call answered with an error status ("Failed to load
   * resource"): API refusals the page shows in its error box, not faults of the page. */
  apiRefusals: string[];
  /** Every request the page made. */
  requests: Request[];
}

export interface Browser {
  context: BrowserContext;
  open(origin: string, viewport?: { width: number; height: number }): Promise<Watched>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does it)`);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: DESKTOP,
    serviceWorkers: 'block',
  });
  const pages: Page[] = [];
  return {
    context,
    async open(origin, viewport = DESKTOP) {
      const page = await context.newPage();
      pages.push(page);
      await page.setViewportSize(viewport);
      const problems: string[] = [];
      const apiRefusals: string[] = [];
      const requests: Request[] = [];
      const host = new URL(origin).host;
      page.on('console', (m) => {
        if (m.type() !== 'error') return;
        const at = m.location().url;
        const api = at.startsWith(`${origin}/v1/`) && m.text().startsWith('Failed to load resource: ');
        (api ? apiRefusals : problems).push(`console error: ${m.text()} (${at})`);
      });
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      page.on('dialog', (d) => {
        problems.push(`dialog opened (${d.type()}): ${d.message()}`);
        void d.dismiss();
      });
      page.on('request', (r) => {
        requests.push(r);
        const u = new URL(r.url());
        if (u.protocol !== 'data:' && u.protocol !== 'blob:' && u.host !== host) problems.push(`request to another host: ${r.url()}`);
      });
      // A failing test keeps what the page looked like.
      onTestFailed(async ({ task }) => {
        const dir = path.join(os.tmpdir(), 'orbit-console-failures');
        fs.mkdirSync(dir, { recursive: true });
        const file = path.join(dir, `${task.name.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 80)}-${Date.now()}.png`);
        await page.screenshot({ path: file, fullPage: true }).catch(() => {});
        process.stderr.write(`console test failed; screenshot kept at ${file}\n`);
      });
      return { page, problems, apiRefusals, requests };
    },
    async close() {
      for (const p of pages) await p.close().catch(() => {});
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** True when the document is wider than the viewport (horizontal scrolling). */
export async function scrollsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth + 1);
}

/** Where `npm run screenshots` keeps the README's pictures; null unless it asked for them. */
export function screenshotDir(): string | null {
  return process.env.ORBIT_CONSOLE_SCREENSHOTS ? path.resolve(process.env.ORBIT_CONSOLE_SCREENSHOTS) : null;
}

/** Signs in on the console at `origin` with a pasted token; resolves on the Overview's first card. */
export async function signInAs(page: Page, origin: string, token: string): Promise<void> {
  await page.goto(`${origin}/console/`);
  await page.fill('input[name=token]', token);
  await page.click('button[type=submit]');
  await page.getByRole('heading', { name: 'Credential' }).waitFor();
}

/** Moves to a console route and waits for a text that says the page is there. */
export async function goTo(page: Page, hash: string, ready: string): Promise<void> {
  await page.evaluate((h) => (location.hash = h), hash);
  await page.getByText(ready, { exact: false }).first().waitFor();
}

/** A file's console browser on its gateway: the pages it opened (each watched) and sign-in. */
export interface ConsoleBrowser {
  /** Every page opened so far, for the end-of-file check that none saw a problem. */
  readonly watched: Watched[];
  /** A new watched page of the browser at `viewport`. */
  open(viewport?: { width: number; height: number }): Promise<Watched>;
  /** signInAs on the fixture's gateway, with the fixture tenant's token unless given. */
  signIn(page: Page, token?: string): Promise<void>;
}

/** Launches the browser in beforeAll and closes it in afterAll (both registered here, so the file's
 * own hooks registered before this call run first). */
export function useConsoleBrowser(f: { readonly gw: { url: string }; readonly t: { token: string } }): ConsoleBrowser {
  let browser: Browser | undefined;
  const watched: Watched[] = [];
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return {
    watched,
    async open(viewport = DESKTOP) {
      if (!browser) throw new Error('useConsoleBrowser: open() before beforeAll');
      const w = await browser.open(f.gw.url, viewport);
      watched.push(w);
      return w;
    },
    signIn: (page, token = f.t.token) => signInAs(page, f.gw.url, token),
  };
}
