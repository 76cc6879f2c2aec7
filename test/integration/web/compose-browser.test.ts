// Writing mail in the web app (Chromium) against the appliance as it runs — api, worker, push and
// protocols daemons — with a sendmail recorder as the outbound transport and real rspamd for the
// outbound scan: a reply goes out threaded, a forward with an uploaded file reaches a second user
// (seen on that user's page), a draft survives a reload, a scheduled send goes when due, and a
// refused send (403, 422, 502) says why and keeps the draft.
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeFindings, launchChromium, signedInContext, watchProblems } from '../../helpers/browser.js';
import { requirePrograms } from '../../helpers/peers.js';
import { startRunningAppliance, type RunningAppliance } from '../../helpers/running-appliance.js';
import { GTUBE, startRspamd, type Rspamd } from '../../helpers/scanners.js';
import { recorder, type Recorder } from '../send/helpers.js';

const ready = requirePrograms('chromium', 'rspamd');

describe.runIf(ready)('compose in the web app against the running appliance', { timeout: 300_000 }, () => {
  let app: RunningAppliance;
  let browser: Browser;
  let rspamd: Rspamd;
  let rec: Recorder;
  let admin = '';
  let alice = '';
  let bob = '';
  let aliceBox = '';

  beforeAll(async () => {
    rec = recorder();
    [rspamd, browser] = await Promise.all([startRspamd(), launchChromium()]);
    app = await startRunningAppliance({
      'mail:transport:sendmail:path': rec.bin,
      'mail:transport:sendmail:log_path': rec.log,
      'mail:scan:rspamd:url': rspamd.url,
      'mail:jobs:send:interval_seconds': 1,
      'mail:security:trusted_authserv_id': 'mx.example.test',
    });
    admin = await app.token('root', { roles: ['admin'], elevated: true });
    expect((await app.call(admin, 'POST', '/api/mail/domains', { name: 'example.test', verified: true })).status).toBe(201);
    const box = await app.call(admin, 'POST', '/api/mail/mailboxes', {
      address: 'alice@example.test',
      aliases: ['sales@example.test'],
      owners: ['alice'],
      name: 'Alice',
    });
    expect(box.status).toBe(201);
    aliceBox = box.body.uid;
    expect(
      (await app.call(admin, 'POST', '/api/mail/mailboxes', { address: 'bob@example.test', owners: ['bob'], name: 'Bob Builder' })).status,
    ).toBe(201);
    [alice, bob] = await Promise.all([app.token('alice'), app.token('bob')]);
  }, 200_000);
  afterAll(async () => {
    await browser?.close();
    app?.stop();
    await rspamd?.stop();
    rmSync(rec?.dir ?? '/nonexistent', { recursive: true, force: true });
  });

  const tabOf = async (token: string, opts: { bypassCSP?: boolean } = {}): Promise<Page> =>
    (await signedInContext(browser, app.api, token, opts)).newPage();
  const folderUid = async (role: string, token = alice, box = aliceBox) =>
    (await app.call(token, 'GET', `/api/mail/folders?mailboxUid=${box}`)).body.find((f: { role: string }) => f.role === role).uid as string;
  const subjectsIn = async (role: string) =>
    (await app.call(alice, 'GET', `/api/mail/messages?folderUid=${await folderUid(role)}&limit=100`)).body.map(
      (m: { subject: string }) => m.subject,
    );
  const inbound = (subject: string, extra = '') =>
    `From: Carol <carol@example.net>\r\nTo: alice@example.test\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '-')}@example.net>\r\nDate: ${new Date().toUTCString()}\r\n${extra}\r\nHello about ${subject}.\r\n`;
  /** Opens the message with this subject in alice's Inbox. */
  const openMessage = async (tab: Page, subject: string) => {
    await tab.goto(`${app.api}/`);
    await tab
      .getByRole('listbox', { name: 'Messages' })
      .getByRole('option', { name: new RegExp(subject) })
      .click();
    await tab.getByRole('toolbar', { name: 'Message actions' }).waitFor();
  };
  /** Clicks Send and waits out the undo window; answers the status line's final words. */
  const sendAndWait = async (tab: Page, done: RegExp) => {
    await tab.getByRole('button', { name: 'Send', exact: true }).click();
    await tab.getByRole('button', { name: 'Undo' }).waitFor();
    const status = tab.locator('.status-line');
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toMatch(done);
    return status.textContent();
  };

  it('replies: the quote, In-Reply-To and References go out through the transport; axe finds nothing serious in the compose view', async () => {
    await app.handOff('alice@example.test', inbound('Lunch plans'));
    const tab = await tabOf(alice, { bypassCSP: true });
    const problems = watchProblems(tab);
    await app.until('delivery', async () => ((await subjectsIn('inbox')).includes('Lunch plans') ? true : undefined));
    await openMessage(tab, 'Lunch plans');
    await tab.getByRole('button', { name: 'Reply', exact: true }).click();
    const form = tab.getByRole('form', { name: 'Reply' });
    await expect.poll(() => form.getByRole('combobox', { name: 'To' }).inputValue()).toBe('Carol <carol@example.net>');
    expect(await form.getByLabel('Subject').inputValue()).toBe('Re: Lunch plans');
    const body = form.getByRole('textbox', { name: 'Message' });
    await expect.poll(() => body.textContent()).toContain('Hello about Lunch plans.');
    expect(await axeFindings(tab)).toEqual([]);
    const shots = process.env.SVCMAIL_SCREENSHOTS ?? join(tmpdir(), 'svcmail-screenshots');
    mkdirSync(shots, { recursive: true });
    for (const width of [360, 1280]) {
      await tab.setViewportSize({ width, height: 800 });
      await tab.screenshot({ path: join(shots, `compose-${width}.png`), fullPage: true });
    }
    await body.click();
    await tab.keyboard.press('Control+Home');
    await tab.keyboard.type('Noon works for me.');
    expect(await sendAndWait(tab, /^Sent to carol@example\.net/)).toBeTruthy();
    const out = rec.runs().find((r) => r.eml.includes('Noon works for me.'));
    expect(out, 'the reply reached the transport').toBeDefined();
    expect(out!.eml).toMatch(/^In-Reply-To: <Lunch-plans@example\.net>/m);
    expect(out!.eml).toMatch(/^References: <Lunch-plans@example\.net>/m);
    expect(out!.eml).toContain('Hello about Lunch plans.');
    expect(await subjectsIn('sent')).toContain('Re: Lunch plans');
    expect(problems).toEqual([]);
  });

  it('a verified sender asked for a read receipt; the settings say ask: the reader offers it and Send receipt sends one', async () => {
    const box = (await app.call(alice, 'GET', `/api/mail/mailboxes/${aliceBox}`)).body;
    const receiptSettings = { internal: 'ask', federated: 'ask', external: 'ask' };
    expect((await app.call(alice, 'PUT', `/api/mail/mailboxes/${aliceBox}`, { receiptSettings, version: box.version })).status).toBe(200);
    await app.handOff(
      'alice@example.test',
      inbound(
        'Contract draft',
        'Authentication-Results: mx.example.test; dkim=pass header.d=example.net; dmarc=pass header.from=example.net\r\nDisposition-Notification-To: carol@example.net\r\n',
      ),
    );
    await app.until('delivery', async () => ((await subjectsIn('inbox')).includes('Contract draft') ? true : undefined));
    const tab = await tabOf(alice);
    const problems = watchProblems(tab);
    await openMessage(tab, 'Contract draft');
    const ask = tab.getByRole('status').filter({ hasText: 'carol@example.net asked to be told that you read this message.' });
    await ask.waitFor({ timeout: 30_000 });
    await ask.getByRole('button', { name: 'Send receipt' }).click();
    await expect.poll(() => ask.count()).toBe(0);
    const sent = await app.until(
      'the receipt',
      async () => rec.runs().find((r) => r.eml.includes('Disposition: manual-action/MDN-sent-manually; displayed')),
      30_000,
    );
    expect(sent.args.at(-1)).toBe('carol@example.net');
    expect(sent.eml).toMatch(/^Subject: Read: Contract draft/m);
    expect(problems).toEqual([]);
  });

  it('recalls a sent message from Sent Items: the page says who it went to, and the unread copy leaves the other mailbox', async () => {
    const tab = await tabOf(alice);
    const problems = watchProblems(tab);
    await tab.goto(`${app.api}/`);
    await tab.getByRole('button', { name: 'New message' }).click();
    const form = tab.getByRole('form', { name: 'New message' });
    await form.getByRole('combobox', { name: 'To' }).fill('bob@example.test, far@example.net');
    await form.getByLabel('Subject').fill('Wrong numbers');
    await sendAndWait(tab, /^Sent to /);
    const bobBox = (await app.call(bob, 'GET', '/api/mail/mailboxes')).body[0].uid;
    const bobHas = async () =>
      (await app.call(bob, 'GET', `/api/mail/search?mailboxUid=${bobBox}&q=${encodeURIComponent('Wrong numbers')}`)).body.length;
    expect(await app.until('bob’s copy', async () => ((await bobHas()) ? true : undefined))).toBe(true);
    await tab
      .getByRole('listbox', { name: 'Folders' })
      .getByRole('option', { name: /Sent Items/ })
      .click();
    await tab
      .getByRole('listbox', { name: 'Messages' })
      .getByRole('option', { name: /Wrong numbers/ })
      .click();
    tab.once('dialog', (d) => void d.accept());
    await tab.getByRole('toolbar', { name: 'Message actions' }).getByRole('button', { name: 'Recall' }).click();
    await expect
      .poll(async () => (await tab.locator('.status-line').textContent())?.trim())
      .toBe('Recall sent to bob@example.test; a report follows. Cannot recall from far@example.net (outside this server).');
    expect(await app.until('the recall', async () => ((await bobHas()) === 0 ? true : undefined), 30_000)).toBe(true);
    expect(problems).toEqual([]);
  });

  it('forwards with an uploaded file to a second user, picked from the suggestions; that user sees it arrive and downloads the file', async () => {
    await app.handOff('alice@example.test', inbound('Quarterly report'));
    await app.until('delivery', async () => ((await subjectsIn('inbox')).includes('Quarterly report') ? true : undefined));
    const bobTab = await tabOf(bob);
    await bobTab.goto(`${app.api}/`);
    await bobTab.getByText('No messages.').waitFor();
    const tab = await tabOf(alice);
    const problems = watchProblems(tab);
    await openMessage(tab, 'Quarterly report');
    await tab.getByRole('button', { name: 'Forward', exact: true }).click();
    const form = tab.getByRole('form', { name: 'Forward' });
    const to = form.getByRole('combobox', { name: 'To' });
    await to.fill('bui');
    const suggestion = form.getByRole('listbox', { name: 'Suggestions for To' }).getByRole('option', { name: /bob@example\.test/ });
    await suggestion.waitFor();
    await to.press('Enter');
    expect(await to.inputValue()).toBe('Bob Builder <bob@example.test>, ');
    const file = { name: 'figures.csv', mimeType: 'text/csv', buffer: Buffer.from('quarter,revenue\nQ3,42\n') };
    await form.locator('input[type=file]').setInputFiles(file);
    await form.getByRole('button', { name: 'Remove figures.csv' }).waitFor();
    await sendAndWait(tab, /^Sent to bob@example\.test/);
    // bob's open page shows it without a reload; the file is listed and downloads as sent
    const row = bobTab.getByRole('listbox', { name: 'Messages' }).getByRole('option', { name: /Fwd: Quarterly report/ });
    await row.click();
    const link = bobTab.getByRole('list', { name: 'Attachments' }).getByRole('link', { name: 'figures.csv' });
    const [download] = await Promise.all([bobTab.waitForEvent('download'), link.click()]);
    expect(readFileSync((await download.path())!, 'utf8')).toBe('quarter,revenue\nQ3,42\n');
    await expect
      .poll(() => bobTab.frameLocator('iframe[title="Message"]').locator('body').textContent())
      .toContain('Hello about Quarterly report.');
    expect(problems).toEqual([]);
  });

  it('a draft is saved as it is typed and survives a reload, opened again from Drafts', async () => {
    const tab = await tabOf(alice);
    await tab.goto(`${app.api}/`);
    await tab.getByRole('button', { name: 'New message' }).click();
    const form = tab.getByRole('form', { name: 'New message' });
    await form.getByRole('combobox', { name: 'To' }).fill('dave@example.net');
    await form.getByLabel('Subject').fill('Kept while typing');
    await form.getByLabel('Rich text').uncheck();
    await form.getByRole('textbox', { name: 'Message' }).fill('Half a thought');
    await expect.poll(() => form.getByRole('status').textContent(), { timeout: 10_000 }).toBe('Draft saved');
    await tab.reload();
    await tab
      .getByRole('listbox', { name: 'Folders' })
      .getByRole('option', { name: /Drafts/ })
      .click();
    await tab
      .getByRole('listbox', { name: 'Messages' })
      .getByRole('option', { name: /Kept while typing/ })
      .click();
    const again = tab.getByRole('form', { name: 'Draft' });
    expect(await again.getByRole('combobox', { name: 'To' }).inputValue()).toBe('dave@example.net');
    expect(await again.getByLabel('Subject').inputValue()).toBe('Kept while typing');
    await expect.poll(() => again.getByRole('textbox', { name: 'Message' }).inputValue()).toContain('Half a thought');

    // The same draft open in a second window: each window saves what it holds, neither overwrites the other.
    const other = await tabOf(alice);
    await other.goto(`${app.api}/`);
    await other
      .getByRole('listbox', { name: 'Folders' })
      .getByRole('option', { name: /Drafts/ })
      .click();
    await other
      .getByRole('listbox', { name: 'Messages' })
      .getByRole('option', { name: /Kept while typing/ })
      .click();
    const second = other.getByRole('form', { name: 'Draft' });
    await expect.poll(() => second.getByRole('textbox', { name: 'Message' }).inputValue()).toContain('Half a thought');
    await again.getByRole('textbox', { name: 'Message' }).fill('Half a thought, finished in the first window');
    await expect.poll(() => again.getByRole('status').textContent(), { timeout: 10_000 }).toBe('Draft saved');
    await second.getByRole('textbox', { name: 'Message' }).fill('Half a thought, finished in the second window');
    await expect
      .poll(() => second.getByRole('status').textContent(), { timeout: 10_000 })
      .toBe('Saved as a new draft: this draft was changed in another window meanwhile, and both are in Drafts');
    const drafts = (await app.call(alice, 'GET', `/api/mail/messages?folderUid=${await folderUid('drafts')}&limit=100`)).body as Array<{
      subject: string;
      preview: string;
    }>;
    expect(
      drafts
        .filter((d) => d.subject === 'Kept while typing')
        .map((d) => d.preview)
        .sort(),
    ).toEqual(['Half a thought, finished in the first window', 'Half a thought, finished in the second window']);
  });

  it('a scheduled send waits in Drafts and goes when due', async () => {
    const tab = await tabOf(alice);
    await tab.goto(`${app.api}/`);
    await tab.getByRole('button', { name: 'New message' }).click();
    const form = tab.getByRole('form', { name: 'New message' });
    await form.getByRole('combobox', { name: 'To' }).fill('later@example.net');
    await form.getByLabel('Subject').fill('Sent later');
    const at = await tab.evaluate(() => {
      const d = new Date(Date.now() + 20_000);
      const p = (n: number) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
    });
    await form.getByLabel('Send later').fill(at);
    await form.getByRole('button', { name: 'Schedule' }).click();
    await expect.poll(() => tab.locator('.status-line').textContent(), { timeout: 20_000 }).toMatch(/^Scheduled: it goes/);
    expect(await subjectsIn('drafts')).toContain('Sent later');
    expect(rec.runs().some((r) => r.eml.includes('Subject: Sent later'))).toBe(false);
    await app.until('the scheduled send', async () => ((await subjectsIn('sent')).includes('Sent later') ? true : undefined), 60_000);
    expect(await subjectsIn('drafts')).not.toContain('Sent later');
    expect(rec.runs().filter((r) => r.eml.includes('Subject: Sent later'))).toHaveLength(1);
  });

  it('a refused send says why and keeps the draft: 502 per recipient, 422 from the scan, 403 for a From no longer permitted', async () => {
    const tab = await tabOf(alice);
    const problems = watchProblems(tab, { allowStatus: (s, url) => [403, 422, 502].includes(s) && url.includes('/send') });
    await tab.goto(`${app.api}/`);
    const write = async (to: string, subject: string, text: string) => {
      await tab.getByRole('button', { name: 'New message' }).click();
      const form = tab.getByRole('form', { name: 'New message' });
      await form.getByRole('combobox', { name: 'To' }).fill(to);
      await form.getByLabel('Subject').fill(subject);
      await form.getByLabel('Rich text').uncheck();
      await form.getByRole('textbox', { name: 'Message' }).fill(text);
      return form;
    };
    const refused = async (headline: string) => {
      await tab.getByRole('button', { name: 'Send', exact: true }).click();
      const alert = tab.getByRole('form', { name: 'Draft' }).getByRole('alert');
      await expect.poll(() => alert.textContent(), { timeout: 30_000 }).toContain(headline);
      return alert;
    };

    await write('refuse-me@example.net', 'Nobody takes this', 'Hello');
    const r502 = await refused('Not sent: no recipient was accepted.');
    expect(await r502.getByRole('list', { name: 'Recipients not accepted' }).textContent()).toMatch(
      /refuse-me@example\.net: .*no such user/,
    );
    await tab.getByRole('button', { name: 'Close' }).click();

    await write('carol@example.net', 'Spam test', `Buy now. ${GTUBE}`);
    await refused('Not sent: the outbound scan refused the message');
    await tab.getByRole('button', { name: 'Close' }).click();

    const form = await write('carol@example.net', 'From sales', 'Offer attached');
    await form.getByLabel('From').selectOption('sales@example.test');
    await expect.poll(() => form.getByRole('status').textContent(), { timeout: 10_000 }).toBe('Draft saved');
    await tab.getByRole('button', { name: 'Send', exact: true }).click();
    await tab.getByRole('button', { name: 'Undo' }).waitFor();
    // the alias is taken away while the send waits out its undo window
    const box = (await app.call(admin, 'GET', `/api/mail/mailboxes/${aliceBox}?scope=admin`)).body;
    expect(
      (await app.call(admin, 'PUT', `/api/mail/mailboxes/${aliceBox}?scope=admin`, { aliases: [], version: box.version })).status,
    ).toBe(200);
    const alert = tab.getByRole('form', { name: 'Draft' }).getByRole('alert');
    await expect.poll(() => alert.textContent(), { timeout: 30_000 }).toContain('Not sent: you may not send from this address.');
    expect(await alert.textContent()).toContain('The message stays in Drafts.');

    const drafts = await subjectsIn('drafts');
    for (const s of ['Nobody takes this', 'Spam test', 'From sales']) expect(drafts).toContain(s);
    expect(rec.runs().some((r) => /Subject: (Spam test|From sales)/.test(r.eml))).toBe(false);
    expect(problems).toEqual([]);
  });
});
