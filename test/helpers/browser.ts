// Debian's Chromium driven by playwright-core, for the web app's tests: a browser, a tab signed in by
// cookie as a user (the session cookie and the CSRF double-submit cookie the page sends back), and
// axe-core's serious and critical findings on a page.
import { createRequire } from 'node:module';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

export const launchChromium = (): Promise<Browser> =>
  chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });

/** A new context with `token` as the jwt cookie of `base` (and a CSRF cookie); bypassCSP for axe's injected script. */
export async function signedInContext(
  browser: Browser,
  base: string,
  token: string,
  opts: { bypassCSP?: boolean } = {},
): Promise<BrowserContext> {
  const context = await browser.newContext({ bypassCSP: opts.bypassCSP ?? false });
  context.setDefaultTimeout(20_000);
  const { hostname } = new URL(base);
  await context.addCookies([
    { name: 'jwt', value: token, domain: hostname, path: '/', httpOnly: true, sameSite: 'Strict' },
    { name: 'csrf', value: 'csrf-of-this-session', domain: hostname, path: '/', sameSite: 'Strict' },
  ]);
  return context;
}

/** Collects what goes wrong on a page (errors, failed requests, 4xx/5xx answers) so a failing test can say it. */
export function watchProblems(tab: Page, opts: { allowStatus?: (status: number, url: string) => boolean; ignore?: RegExp } = {}): string[] {
  const found: string[] = [];
  const problems = { push: (p: string) => void (opts.ignore?.test(p) || found.push(p)) };
  tab.on('pageerror', (e) => problems.push(e.message));
  // The browser also logs each 4xx/5xx answer on the console: an allowed one is no problem there either.
  const allowedLoad = (text: string, url: string) => {
    const status = /status of (\d{3})/.exec(text);
    return status !== null && Boolean(opts.allowStatus?.(Number(status[1]), url));
  };
  tab.on('console', (m) => m.type() === 'error' && !allowedLoad(m.text(), m.location().url) && problems.push(`console: ${m.text()}`));
  // A request the page itself gave up (the view it was for closed) is aborted, not failed.
  tab.on(
    'requestfailed',
    (r) => r.failure()?.errorText !== 'net::ERR_ABORTED' && problems.push(`failed ${r.url()} ${r.failure()?.errorText}`),
  );
  tab.on('response', (r) => r.status() >= 400 && !opts.allowStatus?.(r.status(), r.url()) && problems.push(`${r.status()} ${r.url()}`));
  return found;
}

/** axe-core's serious and critical violations on the page as it is now (the context must bypass the CSP). */
export async function axeFindings(tab: Page): Promise<string[]> {
  await tab.addScriptTag({ path: AXE });
  const violations = await tab.evaluate(async () => {
    type Violation = { id: string; impact: string; nodes: Array<{ target: string[] }> };
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: Violation[] }> } }).axe;
    return (await axe.run()).violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')) }));
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.join(', ')}`);
}

/** Locks the browser session's encryption keys (Settings → Lock now): the session's next page has to unlock again. */
export async function lockKeys(tab: Page, base: string): Promise<void> {
  await tab.goto(`${base}/settings#encryption`);
  await tab.getByRole('button', { name: 'Lock now' }).click();
  await tab.getByRole('form', { name: /^Unlock the encryption keys/ }).waitFor();
}
