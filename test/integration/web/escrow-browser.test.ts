// The key escrow console in Chromium against the API (Spec: Key escrow access): a holder opens a
// matter and asks for access, a second holder approves in another browser, the first loads the
// scope's private key from a file and the matter's encrypted message is decrypted in the browser —
// no request the page makes carries the key; an approval older than the TTL blocks the material and
// the page says why; the escrow audit chain shows verified; axe-core finds nothing serious, 360 and
// 1280 px. The mailbox's key vault, its escrow wrap and the encrypted message are made with the
// reference client, as the owner's client would.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApprovalModel } from '../../../lib/escrow/index.js';
import { drainEscrowExports } from '../../../lib/jobs/escrow-export.js';
import { createVault, encryptEntity, escrowWrap, masterKeyFromPassword, type VaultView } from '../../../lib/keys/client/index.js';
import { axeFindings, launchChromium, watchProblems } from '../../helpers/browser.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { deliverRaw } from '../../helpers/messages.js';
import { requirePrograms } from '../../helpers/peers.js';
import { keyTestValues, TEST_ARGON2 } from '../keys/helpers.js';
import { scopeKeyPair } from '../escrow/scope-key.js';

const ready = requirePrograms('chromium', 'openssl');
const [sqlite] = await sqlBackends();

describe.runIf(ready)('the key escrow console in Chromium', { timeout: 300_000 }, () => {
  let api: TestApi;
  let browser: Browser;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  const scopeKeys = scopeKeyPair('Legal hold');
  let scopeUid = '';
  let requestUid = '';
  const sent: string[] = [];

  beforeAll(async () => {
    [api, browser] = await Promise.all([
      startTestApi(
        sqlite,
        await keyTestValues({
          'mail:escrow:audit_hmac_key': 'audit-key-0123456789',
          data_dir: mkdtempSync(join(tmpdir(), 'svcmail-escrow-web-')),
        }),
      ),
      launchChromium(),
    ]);
    p = await seedUsers(api);
    const h1 = await api.token({ uid: 'h1', roles: ['admin'], elevated: true });
    const v = await createVault(p.aliceBox.uid, 'alice@example.test', 'alice-pw', { argon2: TEST_ARGON2 });
    expect((await api.call('POST', `/api/mail/mailboxes/${p.aliceBox.uid}/keyvault/enroll`, { token: p.alice, body: v.body })).status).toBe(
      201,
    );
    const scope = await api.call('POST', '/api/escrow/scopes', {
      token: h1,
      body: { name: 'Legal', certificatePem: scopeKeys.certPem, holders: ['h1', 'h2', 'h3'], approvalsRequired: 2 },
    });
    scopeUid = scope.body.uid;
    expect(
      (await api.call('POST', `/api/escrow/scopes/${scopeUid}/mailboxes`, { token: h1, body: { mailboxUid: p.aliceBox.uid } })).status,
    ).toBe(201);
    // The owner's client adds the escrow wrap; mail encrypted to alice arrives as ciphertext.
    const vault = (await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}/keyvault`, { token: p.alice })).body as VaultView;
    const master = await masterKeyFromPassword(vault, 'alice-pw');
    const wrap = await escrowWrap(p.aliceBox.uid, vault.masterKeyGeneration, master, scopeUid, scopeKeys.certPem);
    expect(
      (
        await api.call('POST', `/api/mail/mailboxes/${p.aliceBox.uid}/keyvault/wraps`, {
          token: p.alice,
          body: { expectedMasterKeyGeneration: vault.masterKeyGeneration, wrap },
        })
      ).status,
    ).toBe(201);
    const entity = await encryptEntity('Content-Type: text/plain; charset=utf-8\r\n\r\nThe merger closes on Friday.\r\n', [
      vault.encryptionCertificate!,
    ]);
    const raw = `From: ceo@example.test\r\nTo: alice@example.test\r\nSubject: confidential\r\nDate: ${new Date().toUTCString()}\r\nMIME-Version: 1.0\r\n${entity}`;
    expect((await deliverRaw(api, p.aliceBox.uid, Buffer.from(raw))).smime).toBe('encrypted');
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  /** A holder's browser: its own context (cookies), every request body it sends kept in `sent`. */
  const holder = async (
    uid: string,
    opts: { bypassCSP?: boolean } = {},
  ): Promise<{ context: BrowserContext; tab: Page; problems: string[] }> => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: opts.bypassCSP ?? false });
    context.setDefaultTimeout(20_000);
    const token = await api.token({ uid, roles: ['admin'], elevated: true });
    await context.addCookies(
      (
        [
          ['jwt', token, true],
          ['csrf', 'csrf-of-this-session', false],
        ] as const
      ).map(([name, value, httpOnly]) => ({ name, value, domain: '127.0.0.1', path: '/', httpOnly, sameSite: 'Strict' as const })),
    );
    const tab = await context.newPage();
    tab.on('request', (r) => sent.push(`${r.method()} ${r.url()}\n${r.postData() ?? ''}`));
    return { context, tab, problems: watchProblems(tab) };
  };

  it('a matter opened and access asked by one holder, approved by another in their own browser', async () => {
    const one = await holder('h1');
    await one.tab.goto(`${api.url}/escrow#matters`);
    const matter = one.tab.getByRole('form', { name: 'New matter' });
    await matter.getByLabel('Name', { exact: true }).fill('Case 7');
    await matter.getByLabel('Scope').selectOption({ label: 'Legal' });
    await matter.getByLabel(/alice@example\.test/).check();
    const day = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString().slice(0, 10);
    await matter.getByLabel('From').fill(day(-2));
    await matter.getByLabel('To').fill(day(2));
    await matter.getByRole('button', { name: 'Open matter' }).click();
    await expect.poll(() => one.tab.getByRole('table', { name: 'Matters' }).textContent()).toContain('Case 7');

    await one.tab.goto(`${api.url}/escrow#requests`);
    const ask = one.tab.getByRole('form', { name: 'New access request' });
    await ask.getByLabel('Matter').selectOption({ label: 'Case 7' });
    await ask.getByLabel(/Reason/).fill('court order 12/34');
    await ask.getByRole('button', { name: 'Ask for access' }).click();
    const requests = one.tab.getByRole('table', { name: 'Access requests' });
    await expect.poll(() => requests.textContent()).toContain('1 of 2 approvals count');
    requestUid = (
      await api.call('GET', '/api/escrow/access-requests', { token: await api.token({ uid: 'h1', roles: ['admin'], elevated: true }) })
    ).body[0].uid;

    const two = await holder('h2');
    await two.tab.goto(`${api.url}/escrow#requests`);
    const theirs = two.tab.getByRole('table', { name: 'Access requests' });
    await theirs.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => theirs.textContent()).toContain('2 of 2 approvals count');
    expect(await theirs.textContent()).toContain('Approved');
    expect([...one.problems, ...two.problems]).toEqual([]);
    await Promise.all([one.context.close(), two.context.close()]);
  });

  it("the matter's encrypted message decrypts in the browser with the scope key from a file; no request carries the key", async () => {
    const one = await holder('h1');
    await one.tab.goto(`${api.url}/escrow#investigate?request=${requestUid}`);
    await one.tab
      .getByLabel(/Load the scope’s private key/)
      .setInputFiles({ name: 'scope.key', mimeType: 'application/x-pem-file', buffer: Buffer.from(scopeKeys.keyPem) });
    await one.tab.getByText(/held in this page’s memory only/).waitFor();
    await one.tab.getByRole('button', { name: 'Open the matter’s mail' }).click();
    // The worker's part: the export is built while the page waits for it.
    await expect.poll(async () => (await drainEscrowExports(api.deps, 'test-worker')).built, { timeout: 20_000 }).toBe(1);
    const messages = one.tab.getByRole('table', { name: "The matter's messages" });
    await expect.poll(() => messages.textContent(), { timeout: 20_000 }).toContain('Decrypted here');
    await messages.getByRole('button', { name: 'confidential' }).click();
    await expect.poll(() => one.tab.locator('pre.headers').textContent()).toContain('The merger closes on Friday.');
    // The key never left the browser: no request the page made carries any of it.
    const body = scopeKeys.keyPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
    const pieces = [body.slice(0, 24), body.slice(40, 64), body.slice(-24), 'PRIVATE KEY'];
    expect(sent.length).toBeGreaterThan(5);
    expect(sent.filter((s) => pieces.some((piece) => s.includes(piece)))).toEqual([]);
    expect(one.problems).toEqual([]);
    await one.context.close();
  });

  it('an approval older than the TTL blocks the material and the page says so; the audit chain shows verified', async () => {
    const approvals = api.deps.store.repo<{ holder: string; approvedAt: Date; requestUid: string }>(ApprovalModel);
    const [old] = await approvals.list({ filter: { requestUid, holder: 'h2' } });
    await approvals.update(old.uid, { approvedAt: new Date(Date.now() - 73 * 3_600_000) });
    const one = await holder('h1');
    const problems = one.problems;
    await one.tab.goto(`${api.url}/escrow#requests`);
    await expect
      .poll(() => one.tab.getByRole('table', { name: 'Access requests' }).textContent())
      .toContain('expired: approve again to renew');
    await one.tab.goto(`${api.url}/escrow#investigate?request=${requestUid}`);
    await one.tab
      .getByLabel(/Load the scope’s private key/)
      .setInputFiles({ name: 'scope.key', mimeType: 'application/x-pem-file', buffer: Buffer.from(scopeKeys.keyPem) });
    await one.tab.getByRole('button', { name: 'Open the matter’s mail' }).click();
    await expect.poll(() => one.tab.getByRole('alert').textContent()).toMatch(/1 valid approvals of 2 required/);
    expect(problems.filter((x) => !/403/.test(x))).toEqual([]);
    await one.tab.goto(`${api.url}/escrow#audit`);
    await one.tab.getByRole('button', { name: 'Verify the chain' }).click();
    await expect
      .poll(() => one.tab.getByRole('status').filter({ hasText: 'Verified' }).textContent())
      .toMatch(/^Verified: all \d+ entries/);
    await one.context.close();
  });

  it('a change of M proposed on the scope waits for approvals and is withdrawn by its requester', async () => {
    const one = await holder('h1', { bypassCSP: true });
    await one.tab.goto(`${api.url}/escrow#scopes`);
    await one.tab.getByRole('table', { name: 'Scopes' }).getByRole('button', { name: 'Holders and M' }).click();
    const propose = one.tab.getByRole('form', { name: 'Change the holders or M of Legal' });
    await propose.getByLabel('Approvals required (M)').fill('3');
    await propose.getByLabel(/Reason/).fill('a third approval for every access');
    await propose.getByRole('button', { name: 'Propose' }).click();
    const changes = one.tab.getByRole('table', { name: 'Changes of Legal' });
    await expect.poll(() => changes.textContent()).toContain('M 2 → 3');
    expect(await changes.textContent()).toContain('Waiting for approvals');
    expect(await axeFindings(one.tab)).toEqual([]);
    await changes.getByRole('button', { name: 'Withdraw' }).click();
    await expect.poll(() => changes.textContent()).toContain('Withdrawn');
    const scope = (
      await api.call('GET', `/api/escrow/scopes/${scopeUid}`, { token: await api.token({ uid: 'h1', roles: ['admin'], elevated: true }) })
    ).body;
    expect(scope.approvalsRequired).toBe(2);
    expect(one.problems).toEqual([]);
    await one.context.close();
  });

  it('axe-core finds nothing serious on any view; each fits 360 and 1280 px (screenshots)', async () => {
    const { context, tab } = await holder('h1', { bypassCSP: true });
    const shots = process.env.SVCMAIL_SCREENSHOTS ?? join(tmpdir(), 'svcmail-screenshots');
    mkdirSync(shots, { recursive: true });
    const found: string[] = [];
    for (const view of ['requests', 'investigate', 'matters', 'scopes', 'exports', 'audit']) {
      await tab.setViewportSize({ width: 1280, height: 900 });
      await tab.goto(`${api.url}/escrow#${view}`);
      await tab.getByRole('heading', { level: 2 }).first().waitFor();
      await expect.poll(() => tab.getByText('Loading…').count()).toBe(0);
      for (const finding of await axeFindings(tab)) found.push(`${view}: ${finding}`);
      for (const width of [1280, 360]) {
        await tab.setViewportSize({ width, height: 900 });
        const wide = await tab.evaluate(
          () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth,
        );
        if (wide > width) found.push(`${view} at ${width} px is ${wide} px wide`);
        await tab.screenshot({ path: join(shots, `escrow-${view}-${width}.png`), fullPage: true });
      }
    }
    expect(found).toEqual([]);
    await context.close();
  });
});
