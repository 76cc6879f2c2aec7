// The settings page in Chromium against the appliance as it runs: a filter rule made in the page
// files the next delivery (through the real hand-off and worker), and the other sections — a
// signature, the out-of-office reply, blocked senders and receipts, the dark theme — are kept by the
// API and shown again after a reload. axe-core finds nothing serious; screenshots at 1280 and 360 px.
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeFindings, launchChromium, signedInContext, watchProblems } from '../../helpers/browser.js';
import { requirePrograms } from '../../helpers/peers.js';
import { startRunningAppliance, type RunningAppliance } from '../../helpers/running-appliance.js';

const haveBrowser = requirePrograms('chromium');

describe.runIf(haveBrowser)('settings in the web app against the running appliance', { timeout: 300_000 }, () => {
  let app: RunningAppliance;
  let browser: Browser;
  let alice = '';
  let box = '';

  beforeAll(async () => {
    [app, browser] = await Promise.all([startRunningAppliance(), launchChromium()]);
    const admin = await app.token('root', { roles: ['admin'], elevated: true });
    expect((await app.call(admin, 'POST', '/api/mail/domains', { name: 'example.test', verified: true })).status).toBe(201);
    const made = await app.call(admin, 'POST', '/api/mail/mailboxes', { address: 'alice@example.test', owners: ['alice'], name: 'Alice' });
    box = made.body.uid;
    alice = await app.token('alice');
    expect((await app.call(alice, 'POST', '/api/mail/folders', { mailboxUid: box, name: 'Receipts', parentUid: null })).status).toBe(201);
  }, 200_000);
  afterAll(async () => {
    await browser?.close();
    app?.stop();
  });

  const settings = async (opts: { bypassCSP?: boolean } = {}): Promise<Page> => {
    const tab = await (await signedInContext(browser, app.api, alice, opts)).newPage();
    await tab.goto(`${app.api}/settings`);
    await tab.getByRole('heading', { name: 'Filter rules' }).waitFor();
    return tab;
  };
  /** The theme the page applied (the root element's data-theme). */
  const themeOf = (tab: Page) =>
    tab.evaluate(
      () =>
        (globalThis as unknown as { document: { documentElement: { dataset: { theme?: string } } } }).document.documentElement.dataset
          .theme,
    );
  const folderOf = async (subject: string) => {
    const found = (await app.call(alice, 'GET', `/api/mail/search?mailboxUid=${box}&q=${encodeURIComponent(subject)}`)).body as Array<{
      folderUid: string;
    }>;
    if (!found.length) return undefined;
    const folders = (await app.call(alice, 'GET', `/api/mail/folders?mailboxUid=${box}`)).body as Array<{ uid: string; name: string }>;
    return folders.find((f) => f.uid === found[0].folderUid)?.name;
  };

  it('a filter rule made in settings files the next delivery into its folder', async () => {
    const tab = await settings();
    const problems = watchProblems(tab);
    await tab.getByRole('button', { name: 'New rule' }).click();
    const form = tab.getByRole('form', { name: 'New rule' });
    await form.getByLabel('Name').fill('Shop receipts');
    await form.getByLabel('Condition 1 field').selectOption('from');
    await form.getByLabel('Condition 1 operator').selectOption('endsWith');
    await form.getByLabel('Condition 1 value').fill('@shop.example');
    await form.getByLabel('Action 1 type').selectOption('move');
    await form.getByLabel('Action 1 target').selectOption({ label: 'Receipts' });
    await form.getByRole('button', { name: 'Save rule' }).click();
    const rules = tab.locator('#rules ol li');
    await expect
      .poll(() => rules.allTextContents())
      .toEqual([expect.stringContaining('From ends with @shop.example → Move to folder Receipts')]);
    await app.handOff(
      'alice@example.test',
      `From: Shop <orders@shop.example>\r\nTo: alice@example.test\r\nSubject: Order 4711 shipped\r\nMessage-ID: <o4711@shop.example>\r\n\r\nYour order is on its way.\r\n`,
      'orders@shop.example',
    );
    expect(await app.until('the delivery', () => folderOf('4711'))).toBe('Receipts');
    // turned off, the rule leaves the next one in the Inbox
    await tab.getByRole('checkbox', { name: 'Rule Shop receipts on' }).uncheck();
    await expect
      .poll(async () => (await app.call(alice, 'GET', `/api/mail/mail-filter-rules?mailboxUid=${box}`)).body[0].enabled)
      .toBe(false);
    await app.handOff(
      'alice@example.test',
      `From: Shop <orders@shop.example>\r\nTo: alice@example.test\r\nSubject: Order 4712 shipped\r\nMessage-ID: <o4712@shop.example>\r\n\r\nAnother one.\r\n`,
      'orders@shop.example',
    );
    expect(await app.until('the delivery', () => folderOf('4712'))).toBe('Inbox');
    expect(problems).toEqual([]);
  });

  it('signature, out-of-office, senders and receipts, dark theme: kept and shown again after a reload', async () => {
    const tab = await settings();
    const problems = watchProblems(tab);
    const sig = tab.getByRole('form', { name: 'New signature' });
    await sig.getByLabel('Name').fill('Work');
    await sig.getByLabel('Text').fill('Alice, Example Ltd');
    await sig.getByLabel('Use by default').check();
    await sig.getByRole('button', { name: 'Add signature' }).click();
    await tab.locator('#signatures li', { hasText: 'Work' }).waitFor();

    const ooo = tab.getByRole('form', { name: 'Out-of-office reply' });
    await ooo.getByLabel('Send automatic replies').check();
    await ooo.getByLabel('Subject').fill('Back on Monday');
    await ooo.getByLabel('Message').fill('I am away this week.');
    await ooo.getByRole('button', { name: 'Save reply' }).click();
    await expect.poll(() => ooo.getByRole('status').textContent()).toBe('Saved.');

    const senders = tab.getByRole('form', { name: 'Senders and receipts' });
    await senders.getByLabel('Blocked senders').fill('Spammer@Bad.example\n@worse.example');
    await senders.getByLabel('Everyone else').selectOption('ask');
    await senders.getByRole('button', { name: 'Save senders and receipts' }).click();
    await expect.poll(() => senders.getByRole('status').textContent()).toBe('Saved.');

    await tab.getByRole('radio', { name: 'Dark' }).check();
    await expect.poll(() => themeOf(tab)).toBe('dark');

    const mailbox = (await app.call(alice, 'GET', `/api/mail/mailboxes/${box}`)).body;
    expect(mailbox.blockedSenders).toEqual(['spammer@bad.example', '@worse.example']);
    expect(mailbox.receiptSettings.external).toBe('ask');
    expect((await app.call(alice, 'GET', `/api/mail/mailboxes/${box}/out-of-office`)).body).toMatchObject({
      enabled: true,
      subject: 'Back on Monday',
    });
    expect((await app.call(alice, 'GET', `/api/mail/mail-signatures?mailboxUid=${box}`)).body).toMatchObject([
      { name: 'Work', isDefault: true },
    ]);

    await tab.reload();
    await tab.getByRole('heading', { name: 'Filter rules' }).waitFor();
    expect(await tab.getByRole('form', { name: 'Out-of-office reply' }).getByLabel('Subject').inputValue()).toBe('Back on Monday');
    expect(await tab.getByRole('form', { name: 'Senders and receipts' }).getByLabel('Blocked senders').inputValue()).toBe(
      'spammer@bad.example\n@worse.example',
    );
    await expect.poll(() => themeOf(tab)).toBe('dark');
    expect(await tab.getByRole('radio', { name: 'Dark' }).isChecked()).toBe(true);
    expect(problems).toEqual([]);
  });

  it('axe-core finds nothing serious on the settings page; it fits 360 and 1280 px (screenshots)', async () => {
    const tab = await settings({ bypassCSP: true });
    await tab.getByRole('button', { name: 'New rule' }).click();
    expect(await axeFindings(tab)).toEqual([]);
    const shots = process.env.SVCMAIL_SCREENSHOTS ?? join(tmpdir(), 'svcmail-screenshots');
    mkdirSync(shots, { recursive: true });
    for (const width of [360, 1280]) {
      await tab.setViewportSize({ width, height: 900 });
      const wide = await tab.evaluate(
        () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth,
      );
      expect(wide, `${width} px`).toBeLessThanOrEqual(width);
      await tab.screenshot({ path: join(shots, `settings-${width}.png`), fullPage: true });
    }
  });
});
