// The web mail page in Chromium against the appliance as it runs (api, worker, push and protocols
// daemons): mail handed off through /internal/mta appears in the open list and in the folder's
// unread count without a reload (the page's /push socket through the api's front door), and reading
// it clears the count.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, signedInContext, watchProblems } from '../../helpers/browser.js';
import { requirePrograms } from '../../helpers/peers.js';
import { startRunningAppliance, type RunningAppliance } from '../../helpers/running-appliance.js';

const haveBrowser = requirePrograms('chromium');

describe.runIf(haveBrowser)('web mail against the running appliance', { timeout: 300_000 }, () => {
  let app: RunningAppliance;
  let browser: Browser;
  let alice = '';

  beforeAll(async () => {
    app = await startRunningAppliance();
    const admin = await app.token('root', { roles: ['admin'], elevated: true });
    expect((await app.call(admin, 'POST', '/api/mail/domains', { name: 'example.test', verified: true })).status).toBe(201);
    expect(
      (await app.call(admin, 'POST', '/api/mail/mailboxes', { address: 'alice@example.test', owners: ['alice'], name: 'Alice' })).status,
    ).toBe(201);
    alice = await app.token('alice');
    browser = await launchChromium();
  }, 200_000);
  afterAll(async () => {
    await browser?.close();
    app?.stop();
  });

  const signedIn = async (): Promise<Page> => (await signedInContext(browser, app.api, alice)).newPage();
  const message = (subject: string) =>
    `From: Carol <carol@example.net>\r\nTo: alice@example.test\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '-')}@example.net>\r\nDate: ${new Date().toUTCString()}\r\n\r\nHello about ${subject}.\r\n`;
  const idOf = (subject: string) => `<${subject.replace(/\W/g, '-')}@example.net>`;

  it('a delivered message appears live in the list and the unread count; reading it clears the count', async () => {
    const tab = await signedIn();
    const problems = watchProblems(tab);
    try {
      await tab.goto(`${app.api}/`);
      const inbox = tab.getByRole('listbox', { name: 'Folders' }).locator('[role=option]', { hasText: 'Inbox' });
      await inbox.waitFor();
      await tab.getByText('No messages.').waitFor();
      await tab.evaluate(() => ((globalThis as unknown as { stayed: boolean }).stayed = true)); // gone if the page reloads
      await app.handOff('alice@example.test', message('Live one'));
      const row = tab.getByRole('listbox', { name: 'Messages' }).getByRole('option', { name: /Live one/ });
      await row.waitFor();
      expect(await row.getAttribute('class')).toBe('row unread');
      await expect.poll(() => inbox.textContent()).toBe('Inbox1');
      await app.handOff('alice@example.test', message('Live two'));
      await expect.poll(() => tab.getByRole('listbox', { name: 'Messages' }).getByRole('option').allTextContents()).toHaveLength(2);
      await expect.poll(() => inbox.textContent()).toBe('Inbox2');
      const rows = await tab.getByRole('listbox', { name: 'Messages' }).getByRole('option').allTextContents();
      expect(rows[0]).toContain('Live two'); // newest first
      await row.click();
      await expect.poll(() => tab.frameLocator('iframe[title="Message"]').locator('body').textContent()).toContain('Hello about Live one.');
      await expect.poll(() => inbox.textContent()).toBe('Inbox1');
      expect(await tab.evaluate(() => (globalThis as unknown as { stayed?: boolean }).stayed)).toBe(true);
    } catch (e) {
      throw new Error(`${(e as Error).message}\nwhat the page said:\n${problems.join('\n')}`);
    }
    expect(problems).toEqual([]);
  });

  it('a reply joins its conversation row live; picking the row changes each of its messages; Conversations off lists them one by one', async () => {
    const tab = await signedIn();
    const problems = watchProblems(tab);
    try {
      await tab.goto(`${app.api}/`);
      const list = tab.getByRole('listbox', { name: 'Messages' });
      await list.getByRole('option', { name: /Live two/ }).waitFor();
      expect(await list.getByRole('option').count()).toBe(2);
      const reply = message('Re: Live two').replace('\r\n\r\n', `\r\nIn-Reply-To: ${idOf('Live two')}\r\n\r\n`);
      await app.handOff('alice@example.test', reply);
      // The conversation's row now shows the reply, with the count of its messages; no new row.
      const row = list.getByRole('option', { name: /Re: Live two/ });
      await row.waitFor();
      await expect.poll(() => row.locator('.thread-count').textContent()).toBe(' 2 messages, 2 unread');
      expect(await list.getByRole('option').count()).toBe(2);
      await row.click({ modifiers: ['Control'] });
      const bar = tab.getByRole('toolbar', { name: 'Picked messages' });
      await bar.getByRole('button', { name: 'Mark read' }).click();
      const thread = async () =>
        (await app.call(alice, 'GET', `/api/mail/messages?threadId=${encodeURIComponent(idOf('Live two'))}`)).body as Array<{
          seen: boolean;
        }>;
      await expect.poll(async () => (await thread()).map((m) => m.seen)).toEqual([true, true]);
      await expect.poll(() => row.getAttribute('class')).toBe('row');
      await tab.getByRole('button', { name: 'Conversations' }).click();
      await expect.poll(() => list.getByRole('option').count()).toBe(3);
      expect(await list.getByRole('option').allTextContents()).toEqual([
        expect.stringContaining('Re: Live two'),
        expect.stringContaining('Live two'),
        expect.stringContaining('Live one'),
      ]);
    } catch (e) {
      throw new Error(`${(e as Error).message}\nwhat the page said:\n${problems.join('\n')}`);
    }
    expect(problems).toEqual([]);
  });
});
