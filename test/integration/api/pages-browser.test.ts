// The web mail page in a real browser (Debian Chromium driven by playwright-core): the branding
// colour reaches the page, the signed-in user's folders and messages render from the API, opening a
// message shows it in a sandboxed frame and marks it read through a cookie-authenticated,
// CSRF-checked PUT, HTML from a message never runs, remote images load only once the reader allows
// them, and a browser without a session is sent to the sign-in service.
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../helpers/databases.js';
import { deliverRaw } from '../../helpers/messages.js';
import { axeFindings, launchChromium } from '../../helpers/browser.js';
import { requirePrograms } from '../../helpers/peers.js';
import { ingestFixture, type IngestFixture } from '../ingest/setup.js';

const haveBrowser = requirePrograms('chromium');
const [sqlite] = await sqlBackends();
const SIGNIN = 'https://signin.example.test';

describe.runIf(haveBrowser)('web mail page in Chromium', () => {
  let fx: IngestFixture;
  let browser: Browser;
  let messageUid: string;

  beforeAll(async () => {
    fx = await ingestFixture(sqlite, { 'mail:auth_server_url': SIGNIN });
    const admin = await fx.api.token({ uid: 'root', roles: ['admin'], elevated: new Date() });
    expect(
      (await fx.api.call('PUT', '/api/system/branding', { token: admin, body: { name: 'Acme Mail', primaryColor: '#aa3300' } })).status,
    ).toBe(200);
    const html =
      'From: "Dora Sender" <dora@example.net>\nTo: alice@example.test\nSubject: Quarterly numbers\nDate: Mon, 23 Nov 2026 09:00:00 +0000\nMIME-Version: 1.0\nContent-Type: text/html\n\n<p>Numbers attached.</p><img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>\n';
    messageUid = (await deliverRaw(fx.api, fx.users.aliceBox.uid, html)).uid;
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await fx?.close();
  });

  /** A browser tab signed in as alice: the session cookie and the CSRF cookie the page sends back. */
  const aliceTab = async () => {
    const context = await browser.newContext();
    const { hostname } = new URL(fx.api.url);
    await context.addCookies([
      { name: 'jwt', value: fx.users.alice, domain: hostname, path: '/', httpOnly: true, sameSite: 'Strict' },
      { name: 'csrf', value: 'csrf-secret-of-this-session', domain: hostname, path: '/', sameSite: 'Strict' },
    ]);
    return { context, tab: await context.newPage() };
  };

  it('renders the branding, the folders and messages; opening a message shows its text (scripts inert) and marks it read', async () => {
    const { context, tab } = await aliceTab();
    const problems: string[] = [];
    tab.on('pageerror', (e) => problems.push(e.message));
    await tab.goto(`${fx.api.url}/`);
    expect(await tab.title()).toBe('Mail · Acme Mail');
    expect(
      await tab
        .locator('header.brand')
        .evaluate(
          (el) =>
            (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(el).backgroundColor,
        ),
    ).toBe('rgb(170, 51, 0)');
    const folders = tab.getByRole('listbox', { name: 'Folders' });
    await expect.poll(() => folders.getByRole('option').allTextContents()).toContain('Inbox1');
    const row = tab.locator(`[data-message="${messageUid}"]`);
    await row.waitFor();
    expect(await row.getAttribute('class')).toBe('row unread');
    expect(await row.textContent()).toContain('Quarterly numbers');
    await row.click();
    const shown = tab.frameLocator('iframe[title="Message"]').locator('body');
    await expect.poll(() => shown.textContent()).toContain('Numbers attached.');
    await expect
      .poll(async () => (await fx.api.call('GET', `/api/mail/messages/${messageUid}`, { token: fx.users.alice })).body.seen)
      .toBe(true);
    await expect.poll(() => row.getAttribute('class')).toBe('row'); // the page updates after the PUT's answer
    await expect.poll(() => folders.getByRole('option').allTextContents()).toContain('Inbox'); // and the folder's unread count
    expect(await tab.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(problems).toEqual([]);
    await context.close();
  });

  it('a remote image loads only after "Show images": no request reaches its server before the click', async () => {
    const seen: string[] = [];
    const pixel = createServer((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'image/gif' }).end(Buffer.from('R0lGODlhAQABAIAAAAAAAP///ywAAAAAAQABAAACAUwAOw==', 'base64'));
    });
    await new Promise<void>((ok) => pixel.listen(0, '127.0.0.1', ok));
    const at = `http://127.0.0.1:${(pixel.address() as AddressInfo).port}`;
    try {
      const uid = (
        await deliverRaw(
          fx.api,
          fx.users.aliceBox.uid,
          `From: Tracker <news@example.net>\nTo: alice@example.test\nSubject: Newsletter\nMIME-Version: 1.0\nContent-Type: text/html\n\n<p>Big news</p><img src="${at}/open.gif?u=alice" alt="">\n`,
        )
      ).uid;
      const { context, tab } = await aliceTab();
      await tab.goto(`${fx.api.url}/`);
      await tab.locator(`[data-message="${uid}"]`).click();
      const frame = tab.frameLocator('iframe[title="Message"]');
      await expect.poll(() => frame.locator('body').textContent()).toContain('Big news');
      const show = tab.getByRole('button', { name: 'Show images' });
      await show.waitFor();
      await new Promise((r) => setTimeout(r, 500)); // time for a load that must not happen
      expect(seen).toEqual([]);
      await show.click();
      await expect.poll(() => seen).toEqual(['/open.gif?u=alice']);
      expect(await show.count()).toBe(0);
      // an unverified sender cannot be trusted for good: no "Always" offer
      expect(await tab.getByRole('button', { name: /Always show images/ }).count()).toBe(0);

      // a verified sender can: "Always show images from" puts it on Safe Senders, and its next message loads at once
      const letter = (n: number) =>
        `From: Shop <news@shop.example>\nTo: alice@example.test\nSubject: Offer ${n}\nMIME-Version: 1.0\nContent-Type: text/html\n\n<p>Deal ${n}</p><img src="${at}/shop-${n}.gif" alt="">\n`;
      const first = (await deliverRaw(fx.api, fx.users.aliceBox.uid, letter(1), { senderVerified: true })).uid;
      await tab.reload(); // this API runs without the push daemon: the list is read again
      await tab.locator(`[data-message="${first}"]`).click();
      await expect.poll(() => frame.locator('body').textContent()).toContain('Deal 1');
      await tab.getByRole('button', { name: 'Always show images from news@shop.example' }).click();
      await expect.poll(() => seen).toContain('/shop-1.gif');
      const box = (await fx.api.call('GET', `/api/mail/mailboxes/${fx.users.aliceBox.uid}`, { token: fx.users.alice })).body;
      expect(box.safeSenders).toContain('news@shop.example');
      const second = (await deliverRaw(fx.api, fx.users.aliceBox.uid, letter(2), { senderVerified: true })).uid;
      await tab.reload();
      await tab.locator(`[data-message="${second}"]`).click();
      await expect.poll(() => seen).toContain('/shop-2.gif');
      expect(await tab.getByRole('button', { name: 'Show images' }).count()).toBe(0);
      await context.close();
    } finally {
      pixel.close();
    }
  });

  it('the reader flags, marks unread and deletes to Deleted Items, and the list follows', async () => {
    const uid = (
      await deliverRaw(
        fx.api,
        fx.users.aliceBox.uid,
        'From: Eve <eve@example.net>\nTo: alice@example.test\nSubject: Act on me\n\nSome text.\n',
      )
    ).uid;
    const stored = async () => (await fx.api.call('GET', `/api/mail/messages/${uid}`, { token: fx.users.alice })).body;
    const { context, tab } = await aliceTab();
    await tab.goto(`${fx.api.url}/`);
    const row = tab.locator(`[data-message="${uid}"]`);
    await row.click();
    const toolbar = tab.getByRole('toolbar', { name: 'Message actions' });
    await toolbar.getByRole('button', { name: 'Flag' }).click();
    await expect.poll(async () => (await stored()).flagged).toBe(true);
    await row.getByRole('img', { name: 'Flagged' }).waitFor();
    expect(await toolbar.getByRole('button', { name: 'Unflag' }).getAttribute('aria-pressed')).toBe('true');
    await toolbar.getByRole('button', { name: 'Mark unread' }).click();
    await expect.poll(async () => (await stored()).seen).toBe(false);
    await expect.poll(() => row.getAttribute('class')).toBe('row unread');
    await toolbar.getByRole('button', { name: 'Delete' }).click();
    const trash = (
      (await fx.api.call('GET', `/api/mail/folders?mailboxUid=${fx.users.aliceBox.uid}&role=trash`, { token: fx.users.alice }))
        .body as Array<{
        uid: string;
      }>
    )[0].uid;
    await expect.poll(async () => (await stored()).folderUid).toBe(trash);
    await expect.poll(() => row.count()).toBe(0);
    await tab.getByText('Select a message.').waitFor();
    await context.close();
  });

  it('keyboard: j and k walk the list, # deletes, ? shows the shortcuts and Escape closes them, r replies, c writes', async () => {
    const dated = (subject: string, date: string) =>
      deliverRaw(
        fx.api,
        fx.users.aliceBox.uid,
        `From: Kim <kim@example.net>\nTo: alice@example.test\nSubject: ${subject}\nDate: ${date}\n\nText.\n`,
      );
    const first = (await dated('Key one', 'Wed, 02 Jan 2030 10:00:00 +0000')).uid;
    await dated('Key two', 'Tue, 01 Jan 2030 10:00:00 +0000');
    const { context, tab } = await aliceTab();
    await tab.goto(`${fx.api.url}/`);
    await tab.locator(`[data-message="${first}"]`).waitFor();
    const heading = tab.getByRole('article', { name: 'Message' }).getByRole('heading');
    await tab.keyboard.press('j');
    await expect.poll(() => heading.textContent()).toBe('Key one');
    await tab.keyboard.press('j');
    await expect.poll(() => heading.textContent()).toBe('Key two');
    await tab.keyboard.press('k');
    await expect.poll(() => heading.textContent()).toBe('Key one');
    await tab.keyboard.press('#');
    await expect.poll(() => tab.locator(`[data-message="${first}"]`).count()).toBe(0);
    await tab.keyboard.press('?');
    const sheet = tab.getByRole('dialog', { name: 'Keyboard shortcuts' });
    await sheet.waitFor();
    expect(await sheet.locator('kbd').allTextContents()).toEqual(['j', 'k', 'r', 'a', 'f', 'c', '/', 'e', '#', '?']);
    await tab.keyboard.press('Escape');
    await expect.poll(() => sheet.count()).toBe(0);
    // r answers the open message, c writes a new one
    await tab.keyboard.press('j');
    await expect.poll(() => heading.textContent()).toBe('Key two');
    await tab.keyboard.press('r');
    const reply = tab.getByRole('form', { name: 'Reply' });
    await expect.poll(() => reply.getByLabel('Subject').inputValue()).toBe('Re: Key two');
    await reply.getByRole('button', { name: 'Close' }).click();
    await tab.keyboard.press('c');
    await tab.getByRole('form', { name: 'New message' }).waitFor();
    await context.close();
  });

  it('search: / focuses the box, a body word finds its message, filters narrow it, a result opens in the reading pane', async () => {
    await deliverRaw(
      fx.api,
      fx.users.aliceBox.uid,
      'From: Kim <kim@example.net>\nTo: alice@example.test\nSubject: Garden party\nDate: Tue, 01 Dec 2026 10:00:00 +0000\n\nBring the zucchini bread.\n',
    );
    await deliverRaw(
      fx.api,
      fx.users.aliceBox.uid,
      'From: Lee <lee@example.net>\nTo: alice@example.test\nSubject: Zucchini recipes\nDate: Wed, 02 Dec 2026 10:00:00 +0000\n\nAll of them.\n',
    );
    const { context, tab } = await aliceTab();
    await tab.goto(`${fx.api.url}/`);
    await tab.getByRole('listbox', { name: 'Messages' }).getByRole('option').first().waitFor();
    await tab.keyboard.press('/');
    await tab.getByRole('searchbox', { name: 'Search words' }).waitFor();
    await expect
      .poll(() => tab.evaluate(() => (globalThis as unknown as { document: { activeElement: { id: string } } }).document.activeElement.id))
      .toBe('mail-search');
    await tab.keyboard.type('zucchini');
    await tab.keyboard.press('Enter');
    const results = tab.getByRole('listbox', { name: 'Search results' }).getByRole('option');
    await expect.poll(() => results.allTextContents()).toHaveLength(2);
    expect((await results.allTextContents())[0]).toContain('Zucchini recipes'); // newest first
    await tab.getByText('Filters').click();
    await tab.getByRole('search').getByLabel('From').fill('kim@example.net');
    await tab.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => results.allTextContents()).toHaveLength(1);
    await results.first().click();
    await expect
      .poll(() => tab.frameLocator('iframe[title="Message"]').locator('body').textContent())
      .toContain('Bring the zucchini bread.');
    await tab.getByRole('search').getByLabel('Subject').fill('recipes');
    await tab.getByRole('button', { name: 'Search', exact: true }).click();
    await tab.getByText('No messages match.').waitFor();
    await tab.getByRole('button', { name: 'Clear' }).click();
    await tab.getByRole('listbox', { name: 'Messages' }).waitFor();
    await context.close();
  });

  it('organizes: picks with Ctrl/Shift-click and marks them read, drags one onto a new folder, renames it, labels, moves by picker, shows the conversation, empties Deleted Items', async () => {
    const send = (n: number, extra = '') =>
      deliverRaw(
        fx.api,
        fx.users.aliceBox.uid,
        `From: Ola <ola@example.net>\nTo: alice@example.test\nSubject: Sort ${n}\nMessage-ID: <sort-${n}@example.net>\n${extra}Date: Thu, 0${n} Jan 2032 10:00:00 +0000\n\nText ${n}.\n`,
      );
    const [one, two, three] = [(await send(1)).uid, (await send(2, 'In-Reply-To: <sort-1@example.net>\n')).uid, (await send(3)).uid];
    const get = async (uid: string) => (await fx.api.call('GET', `/api/mail/messages/${uid}`, { token: fx.users.alice })).body;
    const { context, tab } = await aliceTab();
    await tab.goto(`${fx.api.url}/`);
    // Message by message: one and two are one conversation, and the picks below are single messages.
    await tab.getByRole('button', { name: 'Conversations' }).click();
    const row = (uid: string) => tab.locator(`[data-message="${uid}"]`);
    await row(three).click({ modifiers: ['Control'] });
    await row(one).click({ modifiers: ['Shift'] });
    const bar = tab.getByRole('toolbar', { name: 'Picked messages' });
    await expect.poll(() => bar.textContent()).toContain('3 picked');
    await bar.getByRole('button', { name: 'Mark read' }).click();
    await expect.poll(async () => (await Promise.all([one, two, three].map(get))).map((m) => m.seen)).toEqual([true, true, true]);
    await expect.poll(() => bar.count()).toBe(0);
    // a new folder, then a message dragged onto it
    const actions = tab.getByRole('toolbar', { name: 'Folder actions' });
    await actions.getByRole('button', { name: 'New folder' }).click();
    await tab.getByLabel('New folder name').fill('Projects');
    await tab.getByRole('button', { name: 'Create' }).click();
    const folders = tab.getByRole('listbox', { name: 'Folders' });
    const projects = folders.getByRole('option', { name: 'Projects' });
    await expect.poll(() => projects.getAttribute('aria-selected')).toBe('true');
    await folders.getByRole('option', { name: /Inbox/ }).click();
    await row(three).dragTo(projects);
    await expect.poll(async () => (await get(three)).folderUid).toBe(await projects.getAttribute('data-folder'));
    await projects.click();
    await row(three).waitFor();
    await actions.getByRole('button', { name: 'Rename' }).click();
    await tab.getByLabel('New name').fill('Projects 2032');
    await tab.getByRole('button', { name: 'Rename' }).click();
    await folders.getByRole('option', { name: 'Projects 2032' }).waitFor();
    // label, conversation and move on the open message
    await folders.getByRole('option', { name: /Inbox/ }).click();
    await row(two).click();
    await tab.locator('summary', { hasText: 'Labels' }).click();
    await tab.getByLabel('New label').fill('urgent');
    await tab.getByRole('button', { name: 'Add', exact: true }).click();
    await expect.poll(async () => (await get(two)).labels).toEqual(['urgent']);
    await tab.locator('summary', { hasText: 'Conversation (2 messages)' }).click();
    await tab.getByRole('button', { name: /Sort 1/ }).click();
    await expect.poll(() => tab.getByRole('article', { name: 'Message' }).getByRole('heading').textContent()).toBe('Sort 1');
    await tab.getByLabel('Move to folder').selectOption({ label: 'Deleted Items' });
    await expect
      .poll(async () => (await get(one)).folderUid)
      .toBe(await folders.getByRole('option', { name: /Deleted Items/ }).getAttribute('data-folder'));
    await folders.getByRole('option', { name: /Deleted Items/ }).click();
    tab.once('dialog', (d) => void d.accept());
    await actions.getByRole('button', { name: 'Empty Deleted Items' }).click();
    await expect.poll(async () => (await fx.api.call('GET', `/api/mail/messages/${one}`, { token: fx.users.alice })).status).toBe(404);
    await tab.getByText('No messages.').waitFor();
    await context.close();
  });

  it('the message list is virtual: of 150 messages only those in view (and a few around) are in the page; scrolling reaches the oldest', async () => {
    for (let n = 0; n < 150; n++)
      await deliverRaw(
        fx.api,
        fx.users.bobBox.uid,
        `From: Many <many@example.net>\nTo: bob@example.test\nSubject: Many ${n}\nDate: ${new Date(Date.UTC(2031, 0, 1, 0, n)).toUTCString()}\n\nText.\n`,
      );
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const { hostname } = new URL(fx.api.url);
    await context.addCookies([{ name: 'jwt', value: fx.users.bob, domain: hostname, path: '/', httpOnly: true, sameSite: 'Strict' }]);
    const tab = await context.newPage();
    await tab.goto(`${fx.api.url}/`);
    const list = tab.getByRole('listbox', { name: 'Messages' });
    await list.locator('[data-message]').first().waitFor();
    const drawn = await list.locator('[data-message]').count();
    expect(drawn).toBeGreaterThan(5);
    expect(drawn).toBeLessThan(40);
    expect(await list.evaluate((el) => (el as unknown as { clientHeight: number }).clientHeight)).toBeLessThan(800);
    await list.evaluate((el) => ((el as unknown as { scrollTop: number }).scrollTop = 1e7));
    await expect.poll(() => list.locator('[aria-posinset="150"]').textContent()).toContain('Many 0');
    expect(await list.locator('[data-message]').count()).toBeLessThan(40);
    await context.close();
  });

  it('axe-core finds no serious or critical accessibility violation on any page, a message open', async () => {
    // axe is injected as a script, which the pages' CSP (rightly) refuses: this context bypasses it.
    const context = await browser.newContext({ bypassCSP: true });
    const { hostname } = new URL(fx.api.url);
    await context.addCookies([{ name: 'jwt', value: fx.users.alice, domain: hostname, path: '/', httpOnly: true, sameSite: 'Strict' }]);
    const tab = await context.newPage();
    const found: string[] = [];
    for (const path of ['/', '/settings', '/admin', '/escrow']) {
      await tab.goto(`${fx.api.url}${path}`);
      if (path === '/') await tab.locator('[data-message]').first().click();
      await tab.locator('main#app > :not(.muted)').first().waitFor(); // past "Loading…"
      for (const finding of await axeFindings(tab)) found.push(`${path}: ${finding}`);
    }
    expect(found).toEqual([]);
    await context.close();
  });

  it('fits a 360 px phone and a 1280 px desktop: folders, list and an open message, nothing wider than the screen', async () => {
    // Screenshots of each width go to SVCMAIL_SCREENSHOTS (default: a folder in the temporary directory), for people to look at.
    const shots = process.env.SVCMAIL_SCREENSHOTS ?? join(tmpdir(), 'svcmail-screenshots');
    mkdirSync(shots, { recursive: true });
    for (const width of [360, 1280]) {
      const { context, tab } = await aliceTab();
      await tab.setViewportSize({ width, height: width === 360 ? 740 : 800 });
      await tab.goto(`${fx.api.url}/`);
      await tab.getByRole('listbox', { name: 'Folders' }).getByRole('option', { name: /Inbox/ }).waitFor();
      const first = tab.getByRole('listbox', { name: 'Messages' }).getByRole('option').first();
      await first.click();
      await tab.getByRole('toolbar', { name: 'Message actions' }).waitFor();
      await expect.poll(() => tab.frameLocator('iframe[title="Message"]').locator('body').textContent()).not.toBe('');
      expect(
        await tab.evaluate(
          () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth,
        ),
        `${width} px`,
      ).toBeLessThanOrEqual(width);
      for (const name of ['Folders', 'Messages'])
        expect(await tab.getByRole('listbox', { name }).isVisible(), `${name} at ${width} px`).toBe(true);
      await tab.screenshot({ path: join(shots, `mail-${width}.png`), fullPage: true });
      await context.close();
    }
  });

  it('a write without the CSRF cookie is refused, and the page says so instead of failing silently', async () => {
    const context = await browser.newContext();
    const { hostname } = new URL(fx.api.url);
    await context.addCookies([{ name: 'jwt', value: fx.users.bob, domain: hostname, path: '/', httpOnly: true }]);
    const tab = await context.newPage();
    await tab.goto(`${fx.api.url}/settings`);
    const ask = tab.getByRole('button', { name: 'Export this mailbox' });
    await ask.click();
    await expect.poll(() => tab.getByRole('alert').textContent()).toContain('api-105');
    expect(
      (await fx.api.call('GET', `/api/mail/data-export-requests?mailboxUid=${fx.users.bobBox.uid}`, { token: fx.users.bob })).body,
    ).toEqual([]);
    await context.close();
  });

  it('without a session the page sends the browser to the sign-in service, with the way back', async () => {
    const context = await browser.newContext();
    const tab = await context.newPage();
    await context.route(`${SIGNIN}/**`, (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: '<title>sign in</title>' }),
    );
    await tab.goto(`${fx.api.url}/admin`);
    await tab.waitForURL(`${SIGNIN}/**`);
    const to = new URL(tab.url());
    expect(to.pathname).toBe('/auth/signin');
    expect(to.searchParams.get('return_to')).toBe(`${fx.api.url}/admin`);
    await context.close();
  });
});
