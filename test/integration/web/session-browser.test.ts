// The page's session in Chromium against the API and the sign-in double (the sign-in service's
// contract: POST /api/auth/refresh and /api/auth/logout, CORS with credentials): the token is
// renewed through the sign-in service at its renewal time (GET /api/session), and Sign out clears
// IndexedDB, caches and storage before the sign-in service clears the cookies, then lands on its
// sign-in page with the way back.
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, watchProblems } from '../../helpers/browser.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { requirePrograms } from '../../helpers/peers.js';
import { startSigninDouble, type SigninDouble } from '../../helpers/signin-double.js';

const haveBrowser = requirePrograms('chromium');
const [sqlite] = await sqlBackends();

describe.runIf(haveBrowser)('session: renewal and sign-out', () => {
  let api: TestApi;
  let signin: SigninDouble;
  let browser: Browser;

  beforeAll(async () => {
    signin = await startSigninDouble({ users: { alice: { passwords: [] } } });
    [api, browser] = await Promise.all([startTestApi(sqlite, { 'mail:auth_server_url': signin.url }), launchChromium()]);
    await seedUsers(api);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await api?.close();
    await signin?.close();
  });

  /** A context signed in as alice with a token that lives `ttl` seconds, the sign-in service's refresh cookie and the CSRF cookie. */
  const signedIn = async (ttl: number): Promise<BrowserContext> => {
    const context = await browser.newContext();
    context.setDefaultTimeout(20_000);
    const token = await api.token({ uid: 'alice', roles: [], ttlSeconds: ttl });
    await context.addCookies(
      [
        ['jwt', token, true],
        ['refresh', 'alice', true],
        ['csrf', 'csrf-of-this-session', false],
      ].map(([name, value, httpOnly]) => ({
        name: String(name),
        value: String(value),
        domain: '127.0.0.1',
        path: '/',
        httpOnly: Boolean(httpOnly),
        sameSite: 'Strict' as const,
      })),
    );
    // The sign-in page itself is the sign-in service's: here a plain page.
    await context.route(`${signin.url}/auth/**`, (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: '<title>Sign in</title>' }),
    );
    return context;
  };
  const jwtOf = async (context: BrowserContext) => (await context.cookies()).find((c) => c.name === 'jwt')?.value;

  it('renews the token through the sign-in service 45 minutes into its life (here: a token 15 minutes and 3 seconds long)', async () => {
    const issued = Date.now();
    const context = await signedIn(15 * 60 + 3);
    const before = await jwtOf(context);
    const tab = await context.newPage();
    // This API runs without the push daemon: the page's /push socket is refused, and the page carries on.
    const problems = watchProblems(tab, { ignore: /\/push' failed/ });
    await tab.goto(`${api.url}/`);
    await tab.getByRole('listbox', { name: 'Folders' }).getByRole('option', { name: /Inbox/ }).waitFor();
    const refreshes = () => signin.calls.filter((c) => c.path === '/api/auth/refresh');
    await expect.poll(() => refreshes().filter((c) => c.status === 204).length, { timeout: 15_000 }).toBe(1);
    // not before the renewal time (15 minutes before expiry: about 3 s after issue; the expiry is in whole seconds)
    expect(refreshes()).toHaveLength(1);
    expect(refreshes()[0]!.at).toBeGreaterThanOrEqual(issued + 2_000);
    const after = await jwtOf(context);
    expect(after).toBeTruthy();
    expect(after).not.toBe(before);
    // the renewed token works: the page goes on reading
    await tab
      .getByRole('listbox', { name: 'Folders' })
      .getByRole('option', { name: /Drafts/ })
      .click();
    await tab.getByText('No messages.').waitFor();
    expect(problems).toEqual([]);
    await context.close();
  });

  it('sign out clears IndexedDB, caches and storage, then the sign-in service clears the cookies; the browser lands on its sign-in page', async () => {
    const context = await signedIn(3600);
    const tab = await context.newPage();
    await tab.goto(`${api.url}/settings`);
    await tab.getByRole('heading', { name: 'Filter rules' }).waitFor();
    // what the app keeps in the browser: an IndexedDB database (keys, local search index), a cache, local storage
    await tab.evaluate(async () => {
      const g = globalThis as unknown as {
        indexedDB: {
          open(n: string): {
            onsuccess: unknown;
            onupgradeneeded: unknown;
            result: { createObjectStore(n: string): unknown; close(): void };
          };
        };
        caches: { open(n: string): Promise<unknown> };
        localStorage: { setItem(k: string, v: string): void };
      };
      await new Promise<void>((done) => {
        const req = g.indexedDB.open('svcmail-local');
        req.onupgradeneeded = () => req.result.createObjectStore('keys');
        req.onsuccess = () => (req.result.close(), done());
      });
      await g.caches.open('svcmail-cache');
      g.localStorage.setItem('svcmail:compose-format', 'text');
    });
    const logoutsBefore = signin.calls.filter((c) => c.path === '/api/auth/logout').length;
    await tab.getByRole('button', { name: 'Sign out' }).click();
    await tab.waitForURL(`${signin.url}/auth/signin**`);
    expect(new URL(tab.url()).searchParams.get('return_to')).toBe(`${api.url}/settings`);
    expect(signin.calls.filter((c) => c.path === '/api/auth/logout' && c.status === 204).length).toBe(logoutsBefore + 1);
    expect((await context.cookies()).map((c) => c.name)).toEqual([]);
    // back on the mail origin: nothing left
    const check = await context.newPage();
    await check.goto(`${api.url}/.well-known/svc/server-info`);
    const left = await check.evaluate(async () => {
      const g = globalThis as unknown as {
        indexedDB: { databases(): Promise<Array<{ name: string }>> };
        caches: { keys(): Promise<string[]> };
        localStorage: { length: number };
      };
      return { dbs: (await g.indexedDB.databases()).map((d) => d.name), caches: await g.caches.keys(), stored: g.localStorage.length };
    });
    expect(left).toEqual({ dbs: [], caches: [], stored: 0 });
    await context.close();
  });
});
