// The administration console in Chromium against the API, its scan job and the sign-in double: an
// elevated administrator adds a domain and reads its DNS checklist, creates a mailbox and a
// distribution list, makes a quarantine rule and tries it on a message, releases the message it held,
// retries a failed delivery and changes the encryption policy (audited); an administrator without a
// fresh elevation is sent through the sign-in service's /auth/elevate and back to the same view,
// where the refused change is offered again; no mail route the console could call shows an
// administrator anyone's mail; axe-core finds nothing serious on any view, at 360 and 1280 px.
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainQueue } from '../../../lib/jobs/index.js';
import { IngestEntryModel } from '../../../lib/ingest/index.js';
import { axeFindings, launchChromium, watchProblems } from '../../helpers/browser.js';
import { sqlBackends } from '../../helpers/databases.js';
import { requirePrograms } from '../../helpers/peers.js';
import { EICAR, freePort, startClamd } from '../../helpers/scanners.js';
import { startSigninDouble, type SigninDouble } from '../../helpers/signin-double.js';
import { deliverRaw } from '../../helpers/messages.js';
import { ingestFixture, message, type IngestFixture } from '../ingest/setup.js';

const haveBrowser = requirePrograms('chromium');
const [sqlite] = await sqlBackends();

describe.runIf(haveBrowser)('the administration console in Chromium', { timeout: 300_000 }, () => {
  let f: IngestFixture;
  let signin: SigninDouble;
  let browser: Browser;
  let worker: ReturnType<IngestFixture['worker']>;

  beforeAll(async () => {
    signin = await startSigninDouble({ users: { root: { passwords: [], roles: ['admin'] } } });
    [f, browser] = await Promise.all([ingestFixture(sqlite, { 'mail:auth_server_url': signin.url }), launchChromium()]);
    // No scanner answers here: the test environment delivers without them; transport rules still run.
    worker = f.worker({
      values: {
        'mail:scan:rspamd:url': `http://127.0.0.1:${await freePort()}`,
        'mail:scan:clamd:address': `127.0.0.1:${await freePort()}`,
      },
    });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await f?.close();
    await signin?.close();
  });

  /** A browser signed in as the administrator root, elevated now or not at all, with the sign-in service's refresh cookie. */
  const adminContext = async (elevated: boolean, opts: { bypassCSP?: boolean } = {}): Promise<BrowserContext> => {
    // bypassCSP only where axe-core's script is added to the page.
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: opts.bypassCSP ?? false });
    context.setDefaultTimeout(20_000);
    const token = await f.api.token({ uid: 'root', roles: ['admin'], ...(elevated ? { elevated: new Date() } : {}) });
    await context.addCookies(
      (
        [
          ['jwt', token, true],
          ['refresh', 'root', true],
          ['csrf', 'csrf-of-this-session', false],
        ] as const
      ).map(([name, value, httpOnly]) => ({ name, value, domain: '127.0.0.1', path: '/', httpOnly, sameSite: 'Strict' as const })),
    );
    return context;
  };
  const open = async (context: BrowserContext, view: string): Promise<{ tab: Page; problems: string[] }> => {
    const tab = await context.newPage();
    const problems = watchProblems(tab);
    await tab.goto(`${f.api.url}/admin#${view}`);
    await tab.getByRole('heading', { level: 2 }).first().waitFor();
    return { tab, problems };
  };
  const admin = () => f.api.token({ uid: 'root', roles: ['admin'], elevated: new Date() });
  const get = async (path: string, token?: string) => (await f.api.call('GET', path, { token: token ?? (await admin()) })).body;

  it('an elevated administrator: a domain and its DNS records, a mailbox, a list, a quarantine rule tried and its catch released', async () => {
    const context = await adminContext(true);
    const { tab, problems } = await open(context, 'domains');
    await tab.getByLabel('Domain', { exact: true }).fill('example.org');
    await tab.getByRole('button', { name: 'Add domain' }).click();
    const dns = tab.getByRole('table', { name: 'DNS records of example.org' });
    await expect.poll(() => dns.getByRole('row').count()).toBeGreaterThan(3);
    expect(await dns.textContent()).toContain('MX');
    expect(await tab.getByRole('table', { name: 'Domains' }).textContent()).toContain('example.org');

    await tab.goto(`${f.api.url}/admin#mailboxes`);
    const box = tab.getByRole('form', { name: 'New mailbox' });
    await box.getByLabel('Address', { exact: true }).fill('carol@example.org');
    await box.getByRole('textbox', { name: /Owners/ }).fill('carol');
    await box.getByLabel(/Quota in MB/).fill('50');
    await box.getByRole('button', { name: 'Create mailbox' }).click();
    const boxes = tab.getByRole('table', { name: 'Mailboxes' });
    await expect.poll(() => boxes.textContent()).toContain('carol@example.org');
    expect(await boxes.textContent()).toContain('of 50.0 MB');
    // Its owners changed: carol and dave.
    await boxes
      .getByRole('row', { name: /carol@example\.org/ })
      .getByRole('button', { name: 'Change' })
      .click();
    const edit = tab.getByRole('form', { name: 'Change carol@example.org' });
    await edit.getByRole('textbox', { name: /Owners/ }).fill('carol, dave');
    await edit.getByRole('button', { name: 'Save mailbox' }).click();
    await expect.poll(() => boxes.getByRole('row', { name: /carol@example\.org/ }).textContent()).toContain('carol, dave');
    expect(
      (await get('/api/mail/mailboxes?scope=admin')).find((b: { address: string }) => b.address === 'carol@example.org').owners.sort(),
    ).toEqual(['carol', 'dave']);

    await tab.goto(`${f.api.url}/admin#lists`);
    const list = tab.getByRole('form', { name: 'New distribution list' });
    await list.getByLabel('Address', { exact: true }).fill('team@example.test');
    await list.getByRole('textbox', { name: /Members/ }).fill('alice@example.test, carol@example.org');
    await list.getByRole('button', { name: 'Create list' }).click();
    await expect.poll(() => tab.getByRole('table', { name: 'Distribution lists' }).textContent()).toContain('team@example.test');
    expect((await get('/api/mail/distribution-lists')).find((l: { address: string }) => l.address === 'team@example.test').members).toEqual(
      ['alice@example.test', 'carol@example.org'],
    );

    await tab.goto(`${f.api.url}/admin#rules`);
    const rule = tab.getByRole('form', { name: 'New transport rule' });
    await rule.getByLabel('Name').fill('Hold invoices');
    await rule.getByLabel('Subject contains').fill('INVOICE');
    await rule.getByLabel('Then').selectOption('quarantine');
    await rule.getByRole('button', { name: 'Create rule' }).click();
    await expect.poll(() => tab.getByRole('table', { name: 'Transport rules' }).textContent()).toContain('Hold invoices');
    const trial = tab.getByRole('form', { name: 'Try the rules on a message' });
    await trial.getByLabel(/Message headers/).fill('From: someone@example.net\nSubject: INVOICE 7\n');
    await trial.getByRole('textbox', { name: /Recipients/ }).fill('alice@example.test');
    await trial.getByRole('button', { name: 'Try' }).click();
    await expect.poll(() => trial.getByRole('status').textContent()).toContain('held in quarantine by “Hold invoices”');

    // The rule catches a delivery; the console releases it to alice's Inbox.
    expect((await f.deliver({ to: ['alice@example.test'], raw: message({ subject: 'INVOICE 7' }) })).status).toBe(202);
    await drainQueue(worker, 'console-worker');
    await tab.goto(`${f.api.url}/admin#quarantine`);
    const held = tab.getByRole('table', { name: 'Held messages' });
    await expect.poll(() => held.textContent()).toContain('INVOICE 7');
    expect(await held.textContent()).toContain('Transport rule: Hold invoices');
    tab.once('dialog', (d) => void d.accept());
    await held.getByRole('button', { name: 'Release' }).click();
    await tab.getByText("Released to alice@example.test's Inbox.").waitFor();
    const inbox = (await get(`/api/mail/folders?mailboxUid=${f.users.aliceBox.uid}`, f.users.alice)).find(
      (x: { role: string }) => x.role === 'inbox',
    );
    expect((await get(`/api/mail/messages?folderUid=${inbox.uid}`, f.users.alice)).map((m: { subject: string }) => m.subject)).toContain(
      'INVOICE 7',
    );
    expect(problems).toEqual([]);
    await context.close();
  });

  it.runIf(requirePrograms('clamd'))(
    'a message carrying EICAR, held by real clamd: the quarantine names the virus, and it is deleted there',
    async () => {
      const clamd = await startClamd();
      try {
        const scanning = f.worker({
          values: { 'mail:scan:rspamd:url': `http://127.0.0.1:${await freePort()}`, 'mail:scan:clamd:address': clamd.address },
        });
        expect(
          (await f.deliver({ to: ['bob@example.test'], raw: message({ subject: 'a file for you (virus)', body: EICAR }) })).status,
        ).toBe(202);
        await drainQueue(scanning, 'console-clamd-worker');
      } finally {
        await clamd.stop();
      }
      const context = await adminContext(true);
      const { tab, problems } = await open(context, 'quarantine');
      const held = tab.getByRole('table', { name: 'Held messages' });
      const row = held.getByRole('row', { name: /a file for you \(virus\)/ });
      await expect.poll(() => row.textContent()).toContain('Virus found: Eicar-Test-Signature-Local');
      tab.once('dialog', (d) => void d.accept());
      await row.getByRole('button', { name: 'Delete' }).click();
      await tab.getByText('Deleted.').waitFor();
      // Gone from the list (an empty quarantine shows no table at all).
      expect(await tab.locator('.record-table').textContent()).not.toContain('a file for you (virus)');
      expect(problems).toEqual([]);
      await context.close();
    },
  );

  it('retries a failed delivery; changes the encryption policy, which the audit log records', async () => {
    const r = await f.deliver({ to: ['bob@example.test'], raw: message({ subject: 'will fail' }) });
    const entries = f.api.deps.store.repo<{ state: string; attempts: number; lastError: string | null }>(IngestEntryModel);
    const [entry] = await entries.list({ filter: { transactionId: r.body.transactionId } });
    await entries.update(entry.uid, { state: 'failed', attempts: 5, lastError: 'the disk was full' });
    const context = await adminContext(true);
    const { tab, problems } = await open(context, 'ingest');
    const failed = tab.getByRole('table', { name: 'Ingest entries: failed' });
    await expect.poll(() => failed.textContent()).toContain('the disk was full');
    await failed.getByRole('button', { name: 'Retry' }).click();
    await tab.getByText('Queued again for bob@example.test.').waitFor();
    expect((await entries.get(entry.uid))!.state).toBe('queued');

    await tab.goto(`${f.api.url}/admin#policies`);
    await tab.getByLabel('To everyone else').selectOption('automatic');
    await tab.getByRole('region', { name: 'Encryption' }).getByRole('button', { name: 'Save' }).click();
    await tab.getByRole('region', { name: 'Encryption' }).getByText('Saved.').waitFor();
    expect((await get('/api/system/encryption-policy')).encryptExternal).toBe('automatic');
    const audit = await get('/api/mail/audit-log?resource=encryption-policy');
    expect(audit[0]).toMatchObject({ actor: 'root', after: { encryptExternal: 'automatic' } });
    expect(problems).toEqual([]);
    await context.close();
  });

  it('without a fresh elevation: through /auth/elevate and back to the same view, where the refused change is offered again', async () => {
    const context = await adminContext(false);
    const { tab } = await open(context, 'policies');
    await tab.getByRole('status').filter({ hasText: 'Not elevated' }).waitFor();
    await tab.getByLabel('To people on this server').selectOption('prohibited');
    const before = signin.calls.filter((c) => c.path === '/auth/elevate').length;
    await tab.getByRole('region', { name: 'Encryption' }).getByRole('button', { name: 'Save' }).click();
    const offer = tab.getByRole('region', { name: 'Change waiting for you' });
    await offer.waitFor();
    expect(signin.calls.filter((c) => c.path === '/auth/elevate').length).toBe(before + 1);
    expect(new URL(tab.url()).pathname + new URL(tab.url()).hash).toBe('/admin#policies');
    expect(await offer.textContent()).toContain('Change the encryption policy');
    await tab
      .getByRole('status')
      .filter({ hasText: /Elevated: sensitive changes are allowed for \d+ min more/ })
      .waitFor();
    expect((await get('/api/system/encryption-policy')).encryptSameOrg).not.toBe('prohibited'); // nothing happened behind the user's back
    await offer.getByRole('button', { name: 'Do it now' }).click();
    await tab.getByText('Done: Change the encryption policy.').waitFor();
    expect((await get('/api/system/encryption-policy')).encryptSameOrg).toBe('prohibited');
    await context.close();
  });

  it("an elevated administrator still cannot read anyone's mail through any mail route the console could call", async () => {
    const token = await admin();
    const alice = f.users.aliceBox.uid;
    const inbox = (await get(`/api/mail/folders?mailboxUid=${alice}`, f.users.alice)).find((x: { role: string }) => x.role === 'inbox');
    const msg = await deliverRaw(f.api, alice, message({ subject: 'Private matters' }));
    const routes = [
      `/api/mail/folders?mailboxUid=${alice}`,
      `/api/mail/folders/${inbox.uid}`,
      `/api/mail/messages?folderUid=${inbox.uid}`,
      `/api/mail/threads?folderUid=${inbox.uid}`,
      `/api/mail/messages/${msg.uid}`,
      `/api/mail/messages/${msg.uid}/body`,
      `/api/mail/messages/${msg.uid}/raw`,
      `/api/mail/search?mailboxUid=${alice}&q=INVOICE`,
      `/api/mail/mailboxes/${alice}`,
    ];
    for (const path of routes) {
      const r = await f.api.call('GET', path, { token });
      expect([path, r.status, r.body.code]).toEqual([path, 404, 'api-107']);
    }
    // What the console shows of a mailbox: addresses, owners and quota.
    const shown = (await get('/api/mail/mailboxes?scope=admin', token)).find((m: { uid: string }) => m.uid === alice);
    expect(Object.keys(shown).sort()).toEqual(['address', 'aliases', 'owners', 'quotaBytes', 'uid', 'usedBytes', 'version']);
  });

  it('axe-core finds nothing serious on any view; each fits 360 and 1280 px (screenshots)', async () => {
    const context = await adminContext(true, { bypassCSP: true });
    const tab = await context.newPage();
    const shots = process.env.SVCMAIL_SCREENSHOTS ?? join(tmpdir(), 'svcmail-screenshots');
    mkdirSync(shots, { recursive: true });
    const found: string[] = [];
    await tab.goto(`${f.api.url}/admin`);
    const views = await tab
      .getByRole('navigation', { name: 'Console views' })
      .getByRole('link')
      .evaluateAll((as) => as.map((a) => (a as unknown as { getAttribute(n: string): string }).getAttribute('href')));
    expect(views.length).toBeGreaterThan(10);
    for (const href of views) {
      await tab.setViewportSize({ width: 1280, height: 900 });
      await tab.goto(`${f.api.url}/admin${href}`);
      await tab.getByRole('heading', { level: 2 }).first().waitFor();
      await expect.poll(() => tab.getByText('Loading…').count()).toBe(0);
      for (const finding of await axeFindings(tab)) found.push(`${href}: ${finding}`);
      for (const width of [1280, 360]) {
        await tab.setViewportSize({ width, height: 900 });
        const wide = await tab.evaluate(
          () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth,
        );
        if (wide > width) found.push(`${href} at ${width} px is ${wide} px wide`);
        await tab.screenshot({ path: join(shots, `admin-${href.slice(1)}-${width}.png`), fullPage: true });
      }
    }
    expect(found).toEqual([]);
    await context.close();
  });
});
